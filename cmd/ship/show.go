package main

import (
	"fmt"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/runtime/questions"
	"github.com/shipmyagent/ship/runtime/records"
	"github.com/shipmyagent/ship/tools"
)

// chatShowTools are the tools that show more than text in the chat:
// chat_send_file (files of the project, kept under .ship/files as sent)
// and chat_ask (a question with buttons; nil questions leaves it out).
func chatShowTools(cfg config.Config, qs *questions.Store, d *dispatch.Deliverer) []agent.Tool {
	ts := []agent.Tool{&tools.ChatSendFile{
		Deliverer: d, Dir: cfg.Dir, Private: config.PrivateNames(), Keep: keptFiles(cfg),
	}}
	if qs != nil {
		ts = append(ts, &tools.ChatAsk{Deliverer: d, Questions: qs})
	}
	return ts
}

// keptFiles is the store of .ship/files that sent files are kept in and
// that the API and the console serve from: its cap is the larger of what
// people may send and what ship may send, so a download fetched from
// another replica is never cut at the smaller one.
func keptFiles(cfg config.Config) *media.Store {
	var opts []media.Option
	if cfg.Files.Shared != nil {
		opts = append(opts, media.WithShared(cfg.Files.Shared))
	}
	return media.NewStore(cfg.Dir, max(cfg.Files.MaxBytes, tools.MaxKeptFileBytes), opts...)
}

// questions is where chat_ask's questions are kept: the shared table in
// cluster mode (a tap may reach any replica), else .ship/questions.json,
// so a question asked before a restart is answered after it.
func (r *replica) questions(cfg config.Config) (*questions.Store, error) {
	if r != nil {
		return questions.New(r.node.Table("questions"), nil), nil
	}
	t, err := records.OpenFile(cfg.StatePath("questions.json"))
	if err != nil {
		return nil, fmt.Errorf("opening questions: %w", err)
	}
	return questions.New(t, nil), nil
}
