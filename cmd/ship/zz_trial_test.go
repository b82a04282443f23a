package main_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
)

func TestZZTrial(t *testing.T) {
	const token = "4242:trial-token"
	tg, _ := faketelegram.Start(faketelegram.Options{Token: token})
	defer tg.Close()
	fake := startFake(t, fakeopenai.RunCommands)
	dir := initProject(t)
	for _, c := range [][]string{{"init", "-q"}, {"-c", "user.email=a@b", "-c", "user.name=Alice", "commit", "-q", "--allow-empty", "-m", "first"}, {"-c", "user.email=a@b", "-c", "user.name=Alice", "commit", "-q", "--allow-empty", "-m", "add approvals"}} {
		cmd := exec.Command("git", c...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatal(string(out))
		}
	}
	setTools(t, dir, `{
  "exec": {"enabled": true},
  "deny": ["exec_shell(rm *)"],
  "roles": {"admin": {"members": ["telegram:1001"], "allow": ["exec_shell(git *)", "exec_shell(make test)"], "approve": true}},
  "chats": {"telegram:chat:-100*": {"requireApproval": ["exec_shell"]}}
}`)
	b, _ := os.ReadFile(dir + "/ship.json")
	fmt.Println(string(b))
	p := startShip(t, dir, modelEnv(fake, "TELEGRAM_BOT_TOKEN="+token, "TELEGRAM_API_BASE="+tg.URL()))
	resp, err := http.Get(p.url + "/api/sse")
	if err != nil {
		t.Fatal(err)
	}
	var evs []string
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				evs = append(evs, sc.Text())
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tg.Push(tg.TopicText(-100900, 5, 1001, "alice", tg.Mention()+" run: git log -3 --format=%s"))
	tg.Push(tg.TopicText(-100900, 5, 2002, "bob", tg.Mention()+" run: rm -rf /tmp/x"))
	var req faketelegram.Sent
	tg.Wait(ctx, func() bool {
		for _, s := range tg.Sent() {
			if len(s.Buttons) > 0 {
				req = s
				return true
			}
		}
		return false
	})
	tg.Wait(ctx, func() bool { return len(tg.Sent()) >= 3 })
	id, _ := tg.Press(-100900, req.MessageID, 2002, "bob", req.Buttons[0][0].CallbackData)
	a, _ := tg.WaitAnswered(ctx, id)
	fmt.Printf("[toast to bob] %s\n", a.Text)
	id, _ = tg.Press(-100900, req.MessageID, 1001, "alice", req.Buttons[0][0].CallbackData)
	tg.WaitAnswered(ctx, id)
	tg.Wait(ctx, func() bool { return len(tg.Sent()) >= 5 })
	id, _ = tg.Press(-100900, req.MessageID, 1001, "alice", req.Buttons[0][0].CallbackData)
	a, _ = tg.WaitAnswered(ctx, id)
	fmt.Printf("[toast to alice, 2nd tap] %s\n", a.Text)
	for _, s := range tg.Sent() {
		fmt.Printf("--- bot → chat %d topic %d (reply to %d) buttons=%v\n%s\n", s.ChatID, s.ThreadID, s.ReplyTo, s.Buttons, s.Text)
	}
	r := p.do(t, "GET", "/api/tools?chatKey=telegram:chat:-100900:topic:5&user=telegram:2002&command=git+log+-3", "")
	fmt.Println(string(r.body))
	time.Sleep(300 * time.Millisecond)
	for _, e := range evs {
		if strings.Contains(e, "tool") || strings.Contains(e, "approval") || strings.Contains(e, "policy") {
			fmt.Println(e)
		}
	}
	b, _ = os.ReadFile(dir + "/.ship/approvals.json")
	fmt.Println(string(b))
}
