package llm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/tmc/langchaingo/llms"
)

// langchaingo v0.1.14's OpenAI client reads llms.WithTopP but never puts
// it in the request (its ChatRequest has a top_p field that GenerateContent
// leaves empty). withTopP carries the value in the call's context, and
// topPDoer, the client's HTTP doer, writes it into the request body.

type topPKey struct{}

// withTopP is an OpenAI model whose calls honour llms.WithTopP.
type withTopP struct{ llms.Model }

func (m withTopP) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var o llms.CallOptions
	for _, opt := range options {
		opt(&o)
	}
	if o.TopP > 0 {
		ctx = context.WithValue(ctx, topPKey{}, o.TopP)
	}
	return m.Model.GenerateContent(ctx, msgs, options...)
}

// topPDoer sends requests through c, adding "top_p" to the JSON body of a
// request whose context carries one.
type topPDoer struct{ c *http.Client }

func (d topPDoer) Do(req *http.Request) (*http.Response, error) {
	p, ok := req.Context().Value(topPKey{}).(float64)
	if !ok || req.Body == nil {
		return d.c.Do(req)
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the model request: %w", err)
	}
	// The body is encoding/json's rendering of a struct whose top_p is
	// always empty (omitted): splicing the field in after the opening
	// brace cannot make a duplicate key.
	if len(body) > 2 && body[0] == '{' {
		field := `{"top_p":` + strconv.FormatFloat(p, 'g', -1, 64) + `,`
		body = append([]byte(field), body[1:]...)
	}
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	req.ContentLength = int64(len(body))
	return d.c.Do(req)
}
