package qq

import (
	"errors"
	"strings"

	"github.com/shipmyagent/ship/adapters/markdown"
)

// codeMarkdownRefused is QQ's refusal of native markdown from a bot
// without the permission: 50056 "不允许发送 markdown content"
// (bot.q.qq.com/wiki/develop/api-v2/openapi/error/error.md). Markdown
// messages are by invitation ("目前需要内邀开通", message/type/markdown.md).
const codeMarkdownRefused = 50056

// errMarkdownRefused: QQ refused a markdown message; the reply goes again
// as plain text.
var errMarkdownRefused = errors.New("QQ refused markdown (the bot lacks the Markdown permission)")

// markdownRefused reports whether err is QQ's refusal of markdown.
func markdownRefused(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == codeMarkdownRefused
}

// render turns the model's Markdown into what a QQ message carries: with
// md, QQ's own markdown, which documents headings, emphasis, links,
// images, lists, quotes and rules but no tables (tables become aligned
// text in a code block, as markdown.PlainTables writes them); otherwise
// plain text, since QQ shows a text message as typed (markdown.Plain).
// A text that renders to nothing (an empty code block) goes as written.
func render(text string, md bool) string {
	out := markdown.Plain(text)
	if md {
		out = strings.TrimSpace(markdown.PlainTables(text))
	}
	if out == "" {
		return strings.TrimSpace(text)
	}
	return out
}
