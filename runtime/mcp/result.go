package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxResultBytes bounds what one call gives the model, like exec_shell's
// output: a tool that returns a whole database dump must not fill the
// context window.
const maxResultBytes = 64 << 10

// format turns a call's result into text for the model: text content as
// it is; images, audio and resources described (type, MIME type, size or
// URI), never pasted as base64.
func format(res *sdk.CallToolResult) Result {
	if res == nil {
		return Result{}
	}
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, describe(c))
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	text := strings.Join(parts, "\n")
	if res.IsError && strings.TrimSpace(text) == "" {
		text = "the tool reported an error without saying what"
	}
	return Result{Text: clip(text, maxResultBytes), IsError: res.IsError}
}

func describe(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return fmt.Sprintf("[image: %s, %d bytes; not shown]", orUnknown(c.MIMEType), len(c.Data))
	case *sdk.AudioContent:
		return fmt.Sprintf("[audio: %s, %d bytes; not shown]", orUnknown(c.MIMEType), len(c.Data))
	case *sdk.ResourceLink:
		d := []string{}
		if c.Name != "" {
			d = append(d, c.Name)
		}
		if c.MIMEType != "" {
			d = append(d, c.MIMEType)
		}
		if c.Size != nil {
			d = append(d, fmt.Sprintf("%d bytes", *c.Size))
		}
		return fmt.Sprintf("[resource link: %s (%s)]", c.URI, strings.Join(d, ", "))
	case *sdk.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return "[resource: empty]"
		}
		size := fmt.Sprintf("%d bytes", len(r.Blob))
		if r.Text != "" {
			size = fmt.Sprintf("%d characters of text", len([]rune(r.Text)))
		}
		return fmt.Sprintf("[resource: %s (%s, %s); not shown]", r.URI, orUnknown(r.MIMEType), size)
	}
	b, err := json.Marshal(c)
	kind := "unknown"
	if err == nil {
		var v struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(b, &v) == nil && v.Type != "" {
			kind = v.Type
		}
	}
	return fmt.Sprintf("[%s content; not shown]", kind)
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}
