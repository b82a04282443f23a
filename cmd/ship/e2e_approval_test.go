package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
)

// approvalTools is the README's worked example: only alice (an admin) may
// run the shell, in groups only after approval, and nobody may run rm.
const approvalTools = `{
  "exec": {"enabled": true},
  "deny": ["exec_shell(rm *)"],
  "roles": {
    "admin": {
      "members": ["telegram:1001"],
      "allow": ["exec_shell(git *)", "exec_shell(make test)", "exec_shell(echo *)"],
      "approve": true
    }
  },
  "chats": {"telegram:chat:-100*": {"requireApproval": ["exec_shell"]}},
  "approvalTTLSeconds": %d
}`

// setTools puts a tools section into the project's ship.json, as a user
// would edit it.
func setTools(t *testing.T, dir, tools string) {
	t.Helper()
	setConfig(t, dir, "tools", tools)
}

// setConfig puts section key of ship.json, as a user would edit it.
func setConfig(t *testing.T, dir, key, section string) {
	t.Helper()
	path := filepath.Join(dir, "ship.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc[key] = json.RawMessage(section)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestE2EApprovalInATelegramTopic runs the approval path through the real
// binary and the Telegram fake: the request with buttons lands in the
// topic, other chats are served while it waits, a non-admin's tap is
// refused, ship is killed with SIGKILL, and after the restart the admin's
// tap runs the command once; a second tap says it was used; an expired
// code says so.
func TestE2EApprovalInATelegramTopic(t *testing.T) {
	const token = "4242:e2e-approval-token"
	const group, topic = int64(-100900), int64(5)
	tg := startTelegram(t, token)
	fake := startFake(t, fakeopenai.RunCommands)
	dir := initProject(t)
	setTools(t, dir, fmt.Sprintf(approvalTools, 600))
	env := modelEnv(fake, telegramEnv(tg, token)...)
	p := startShip(t, dir, env)

	ctx, cancel := context.WithTimeout(context.Background(), 4*hangGuard)
	defer cancel()
	waitFor := func(what string, ok func(faketelegram.Sent) bool) faketelegram.Sent {
		t.Helper()
		var found faketelegram.Sent
		if err := tg.Wait(ctx, func() bool {
			for _, s := range tg.Shown() {
				if ok(s) {
					found = s
					return true
				}
			}
			return false
		}); err != nil {
			t.Fatalf("waiting for %s: %v; sent: %+v", what, err, tg.Shown())
		}
		return found
	}
	inTopic := func(s faketelegram.Sent) bool { return s.ChatID == group && s.ThreadID == topic }
	press := func(msgID, user int64, name, data string) string {
		t.Helper()
		id, err := tg.Press(group, msgID, user, name, data)
		if err != nil {
			t.Fatal(err)
		}
		a, err := tg.WaitAnswered(ctx, id)
		if err != nil {
			t.Fatalf("tap not answered: %v", err)
		}
		return a.Text
	}
	ask := func(cmd string) (msgID int64, code string) {
		t.Helper()
		tg.Push(tg.TopicText(group, topic, 1001, "alice", tg.Mention()+" run: "+cmd))
		req := waitFor("the approval request for "+cmd, func(s faketelegram.Sent) bool {
			return inTopic(s) && len(s.Buttons) > 0 && strings.Contains(s.Text, cmd)
		})
		if len(req.Buttons[0]) != 2 || req.Buttons[0][0].Text != "Approve" || !strings.Contains(req.Text, "role admin") || req.ReplyTo == 0 {
			t.Fatalf("approval request %+v: want Approve and Deny, who may approve, a reply to the ask", req)
		}
		code, _ = strings.CutPrefix(req.Buttons[0][0].CallbackData, "/approve ")
		return req.MessageID, code
	}

	reqMsg, code := ask("echo e2e-approved")
	// The run ended: the model was told approval was asked.
	waitFor("the model's note", func(s faketelegram.Sent) bool {
		return inTopic(s) && strings.Contains(s.Text, "approvalRequired") && strings.Contains(s.Text, code)
	})
	// The queue serves another chat while the approval waits.
	tg.Push(tg.PrivateText(3003, "carol", "hello meanwhile"))
	waitFor("carol's answer", func(s faketelegram.Sent) bool { return s.ChatID == 3003 && s.Text == "echo: hello meanwhile" })
	// bob is no admin: his tap does nothing but say why.
	if got := press(reqMsg, 2002, "bob", "/approve "+code); !strings.Contains(got, "may not approve") {
		t.Errorf("bob's tap answered %q", got)
	}

	// kill -9 between request and approval.
	p.stop(t, syscall.SIGKILL)
	p = startShip(t, dir, env)

	if got := press(reqMsg, 1001, "alice", "/approve "+code); got != "" {
		t.Errorf("alice's tap answered %q; the chat hears about it instead", got)
	}
	waitFor("the approval notice", func(s faketelegram.Sent) bool {
		return inTopic(s) && strings.HasPrefix(s.Text, "Approved by alice") && strings.Contains(s.Text, "echo e2e-approved")
	})
	res := waitFor("the command's output", func(s faketelegram.Sent) bool {
		return inTopic(s) && strings.Contains(s.Text, `e2e-approved\n`)
	})
	if res.ReplyTo != reqMsg {
		t.Errorf("the result replies to %d, want the approval request %d", res.ReplyTo, reqMsg)
	}
	if got := press(reqMsg, 1001, "alice", "/approve "+code); !strings.Contains(got, "already approved") || !strings.Contains(got, "used") {
		t.Errorf("second tap answered %q", got)
	}
	ran := 0
	for _, s := range tg.Shown() {
		if strings.Contains(s.Text, `e2e-approved\n`) {
			ran++
		}
	}
	if ran != 1 {
		t.Errorf("the command's output arrived %d times, want once", ran)
	}

	// A one-second approval expires unanswered: the topic hears it once,
	// and a late tap says so.
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	setTools(t, dir, fmt.Sprintf(approvalTools, 1))
	p = startShip(t, dir, env)
	lateMsg, lateCode := ask("echo e2e-too-late")
	waitFor("the expiry notice", func(s faketelegram.Sent) bool {
		return inTopic(s) && strings.Contains(s.Text, "expired unanswered") && strings.Contains(s.Text, lateCode)
	})
	if got := press(lateMsg, 1001, "alice", "/approve "+lateCode); !strings.Contains(got, "expired") {
		t.Errorf("late tap answered %q", got)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
	for _, s := range tg.Shown() {
		if strings.Contains(s.Text, "e2e-too-late\\n") {
			t.Errorf("an expired command ran: %q", s.Text)
		}
	}
}
