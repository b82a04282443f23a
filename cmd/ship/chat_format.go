package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shipmyagent/ship/internal/shipclient"
	"github.com/shipmyagent/ship/runtime/media"
)

// Widths of the compact tool line: enough to recognise the arguments and
// the result, short enough to stay on one line of a normal terminal.
const (
	maxArgsRunes   = 60
	maxResultRunes = 60
)

// defaultHistory is how many messages /history shows without a number.
const defaultHistory = 10

// maxHistory keeps /history to what a terminal can usefully show.
const maxHistory = 1000

// chatCommand is a parsed slash command.
type chatCommand struct {
	name string // quit, clear, info, history, help
	n    int    // history: how many messages
}

const chatHelp = `Commands:
  /history [n]  show the last n messages of this chat (default 10)
  /info         show the server, chat and model
  /clear        clear the screen
  /jobs, /cancel ID, /approve CODE, /deny CODE
                go to ship, as in any chat: background jobs and approvals
  /quit         leave (also /exit, Ctrl+C, or Ctrl+D on an empty line)
  //text        send "/text" as a message
A line ending with \ continues on the next line.`

// serverCommand says whether name is a chat command ship itself answers in
// an api chat (server/commands.go): those are sent as messages, not taken
// here.
func serverCommand(name string) bool {
	switch name {
	case "jobs", "cancel", "approve", "deny":
		return true
	}
	return false
}

// parseCommand recognises a slash command. isCmd is false for a message,
// whose text is returned (with a leading "//" turned into "/"); err says
// what is wrong with a mistyped command.
func parseCommand(line string) (cmd chatCommand, text string, isCmd bool, err error) {
	trimmed := strings.TrimSpace(line)
	if strings.HasPrefix(trimmed, "//") {
		return chatCommand{}, strings.Replace(line, "//", "/", 1), false, nil
	}
	if !strings.HasPrefix(trimmed, "/") {
		return chatCommand{}, line, false, nil
	}
	fields := strings.Fields(trimmed)
	name, args := strings.ToLower(fields[0][1:]), fields[1:]
	if serverCommand(name) {
		return chatCommand{}, trimmed, false, nil
	}
	switch name {
	case "quit", "exit", "q":
		name = "quit"
	case "clear", "info", "help":
	case "history":
		n := defaultHistory
		if len(args) > 0 {
			v, convErr := strconv.Atoi(args[0])
			if convErr != nil || v < 1 || v > maxHistory {
				return chatCommand{}, "", true, fmt.Errorf("usage: /history [n], with n from 1 to %d", maxHistory)
			}
			n, args = v, args[1:]
		}
		cmd.n = n
	default:
		return chatCommand{}, "", true, fmt.Errorf("unknown command /%s: try /help (start a message with // to send it as text)", name)
	}
	if len(args) > 0 {
		return chatCommand{}, "", true, fmt.Errorf("/%s: unexpected %q; try /help", name, strings.Join(args, " "))
	}
	cmd.name = name
	return cmd, "", true, nil
}

// toolLine is the one compact line of a finished tool call:
// "⚙ chat_load_history {"limit":20} → ok (2 inserted)" or
// "✗ chat_send → error: …".
func toolLine(name, input string, res *shipclient.AbilityResult) (line string, ok bool) {
	if name == "" {
		name = "tool"
	}
	if !res.OK() {
		kind := "error"
		if res != nil && res.Type != "" && res.Type != "error" {
			kind = res.Type
		}
		return fmt.Sprintf("✗ %s → %s: %s", name, kind, oneLine(res.Detail(), maxResultRunes)), false
	}
	if id := startedJob(res.Result); id != "" {
		return fmt.Sprintf("⏳ %s → job %s started in the background; its result comes as a new message (/jobs, /cancel %s)", name, id, id), true
	}
	line = "⚙ " + name
	if args := compactJSON(input); args != "" && args != "{}" {
		line += " " + oneLine(args, maxArgsRunes)
	}
	line += " → ok"
	if s := resultSummary(res.Result); s != "" {
		line += " (" + s + ")"
	}
	return line, true
}

// startedJob is the id of the background job a tool's result says it
// started, "" when it started none.
func startedJob(result string) string {
	var r struct{ Job, Status string }
	if json.Unmarshal([]byte(result), &r) != nil || r.Status != "started" {
		return ""
	}
	return r.Job
}

// compactJSON removes the insignificant spaces of a JSON text; anything
// else is returned as it is.
func compactJSON(s string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return strings.TrimSpace(s)
	}
	return b.String()
}

// resultSummary boils a tool's result down to a few words: the count of
// chat_load_history, or up to three short scalar fields. "success" is
// already said by "ok", and notes are for the model.
func resultSummary(result string) string {
	var obj map[string]any
	if json.Unmarshal([]byte(result), &obj) != nil {
		return oneLine(result, maxResultRunes)
	}
	if n, ok := obj["inserted"].(float64); ok {
		return fmt.Sprintf("%d inserted", int(n))
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if k == "success" || k == "note" || len(parts) == 3 {
			continue
		}
		switch v := obj[k].(type) {
		case string:
			if utf8.RuneCountInString(v) <= 24 {
				parts = append(parts, k+"="+v)
			}
		case float64, bool:
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	return strings.Join(parts, " ")
}

// oneLine flattens s to one line of at most maxRunes runes.
func oneLine(s string, maxRunes int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= maxRunes {
		return s
	}
	r := []rune(s)
	return string(r[:maxRunes-1]) + "…"
}

// fileLine is the line of a file the run sent: "📎 chart.png (image/png,
// 12.3 KB) http://127.0.0.1:3000/api/files/…", the URL downloading it
// with the API token.
func fileLine(ev shipclient.Event) string {
	name := ev.Name
	if name == "" {
		name = "file"
	}
	var about []string
	if ev.MIMEType != "" {
		about = append(about, ev.MIMEType)
	}
	if ev.Size > 0 {
		about = append(about, media.Size(ev.Size))
	}
	line := "📎 " + oneLine(name, maxArgsRunes)
	if len(about) > 0 {
		line += " (" + strings.Join(about, ", ") + ")"
	}
	u := ev.DownloadURL
	if u == "" {
		u = ev.URL
	}
	if u != "" {
		line += " " + u
	}
	return line
}

// questionText shows a question the agent asked: the question, its
// choices numbered, and how to answer (typing a number answers it: the
// server takes a message that is only a choice's number as the answer).
func questionText(ev shipclient.Event) string {
	var b strings.Builder
	b.WriteString("? " + strings.TrimSpace(ev.Question))
	for i, c := range ev.Choices {
		fmt.Fprintf(&b, "\n  %d. %s", i+1, oneLine(c, maxArgsRunes))
	}
	if len(ev.Choices) > 0 {
		fmt.Fprintf(&b, "\n  type the number to answer (1–%d)", len(ev.Choices))
	}
	return b.String()
}

// runErrorLine says how a run failed.
func runErrorLine(code, message string) string {
	if code == "" {
		code = "ERROR"
	}
	return fmt.Sprintf("✗ the turn failed: %s: %s", code, message)
}

// metricsLine ends a turn: "— 1.24 s · 2 tool calls · 512 tokens (480 in,
// 32 out)", or "tokens n/a" when the provider did not report usage.
func metricsLine(took time.Duration, toolCalls int, usage *shipclient.Usage) string {
	calls := "tool calls"
	if toolCalls == 1 {
		calls = "tool call"
	}
	tokens := "tokens n/a"
	if usage != nil {
		tokens = fmt.Sprintf("%d tokens (%d in, %d out)", usage.Total(), usage.PromptTokens, usage.CompletionTokens)
	}
	return fmt.Sprintf("— %.2f s · %d %s · %s", took.Seconds(), toolCalls, calls, tokens)
}

// historyLines renders messages as "15:04:05 user  text", with a date when
// the message is not from today and later lines of a text indented.
func historyLines(msgs []shipclient.Message, now time.Time) []string {
	if len(msgs) == 0 {
		return []string{"(no messages in this chat yet)"}
	}
	var out []string
	for _, m := range msgs {
		ts := m.Time().In(now.Location())
		stamp := ts.Format("15:04:05")
		if y, mo, d := ts.Date(); y != now.Year() || mo != now.Month() || d != now.Day() {
			stamp = ts.Format("2006-01-02 15:04")
		}
		lines := strings.Split(strings.TrimRight(m.Text, "\n"), "\n")
		out = append(out, fmt.Sprintf("%s %-9s %s", stamp, m.Role, lines[0]))
		for _, l := range lines[1:] {
			out = append(out, strings.Repeat(" ", len(stamp)+11)+l)
		}
	}
	return out
}

// infoLines describes the connection for /info; st is nil when the server
// could not be asked.
func infoLines(baseURL, chatID, chatKey string, st *shipclient.Status, stErr error) []string {
	out := []string{
		"url      " + baseURL,
		"chat     " + chatID,
		"chatKey  " + chatKey,
	}
	if st == nil {
		return append(out, "server   "+describeErr(stErr))
	}
	return append(out,
		"server   ship "+st.Version+", up "+(time.Duration(st.UptimeSeconds)*time.Second).String(),
		"model    "+st.Model)
}

// describeErr is an error as a chat user should read it.
func describeErr(err error) string {
	if err == nil {
		return ""
	}
	if shipclient.IsUnreachable(err) {
		return "unreachable (" + err.Error() + ")"
	}
	return err.Error()
}
