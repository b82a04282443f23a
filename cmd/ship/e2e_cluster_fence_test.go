package main_test

import (
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// A replica paused (SIGSTOP) mid-turn past its partition lease, then
// resumed, sends nothing for the message: the replica that took the
// partition over answers it, and the woken one's send is fenced. Exactly
// one reply reaches the chat.
func TestE2EClusterAPausedReplicaDoesNotAnswerTwice(t *testing.T) {
	const token = "4343:e2e-fence-token"
	const text = "slow one"
	tg := startTelegram(t, token)
	var mu sync.Mutex
	calls := 0
	entered := make(chan struct{}, 1)
	unblock := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-unblock:
		default:
			close(unblock)
		}
	})
	fake := startFake(t, func(r fakeopenai.Request) fakeopenai.Response {
		if r.LastUser() == text && len(r.ToolResults()) == 0 {
			mu.Lock()
			calls++
			first := calls == 1
			mu.Unlock()
			if first {
				entered <- struct{}{}
				<-unblock
			}
		}
		return fakeopenai.EchoChatSend(r)
	})
	env := append(modelEnv(fake, telegramEnv(tg, token)...), "SHIP_LOG_LEVEL=info")

	rs := newReplicas(t, 3, "f", nil)
	for _, r := range rs {
		r.start(t, env)
	}
	within(t, clusterReady, "every replica listing f1, f2, f3 with their partitions", func() bool {
		for _, r := range rs {
			st, ok := r.proc().cluster()
			if !ok || len(st.Replicas) != 3 {
				return false
			}
			held := 0
			for _, m := range st.Replicas {
				held += len(m.Partitions)
			}
			if held != 16 {
				return false
			}
		}
		return true
	})

	u := tg.PrivateText(77, "u77", text)
	tg.Push(u)
	await(t, entered, "the model call of the first run")
	// The replica running the chat reports it in its heartbeat.
	var runner *replica
	within(t, clusterReady, "a replica reporting telegram:chat:77 as running", func() bool {
		st, ok := rs[0].proc().cluster()
		if !ok {
			st, ok = rs[1].proc().cluster()
		}
		for _, m := range st.Replicas {
			for _, key := range m.Running {
				if strings.Contains(key, ":77") {
					for _, r := range rs {
						if r.name == m.Name {
							runner = r
						}
					}
				}
			}
		}
		return ok && runner != nil
	})
	paused := runner.proc()
	if err := paused.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = paused.cmd.Process.Signal(syscall.SIGCONT) })
	close(unblock) // its answer waits in the paused process's socket

	replies := func() int {
		n := 0
		for _, s := range tg.Sent() {
			if s.ChatID == 77 && strings.Contains(s.Text, "echo: "+text) {
				n++
			}
		}
		return n
	}
	within(t, 3*clusterReady, "another replica taking the partition over and answering", func() bool { return replies() == 1 })
	if err := paused.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	within(t, 2*clusterReady, runner.name+" resumed, ending its run without sending (or sending a second reply)", func() bool {
		return replies() > 1 || strings.Contains(paused.stderr.String(), "another replica answers this message")
	})
	if n := replies(); n != 1 {
		t.Fatalf("%d replies to one message after the paused replica resumed; want exactly 1", n)
	}
	if !strings.Contains(paused.stderr.String(), "fenced") {
		t.Errorf("%s's log does not say its send was fenced", runner.name)
	}
}
