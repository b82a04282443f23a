package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/llm"
)

// Default API bases, as langchaingo's clients use them when ship.json
// names none.
const (
	openAIBase    = "https://api.openai.com/v1"
	anthropicBase = "https://api.anthropic.com/v1"
	// anthropicVersion is the API version header every Anthropic request
	// needs (https://docs.anthropic.com/en/api/versioning).
	anthropicVersion = "2023-06-01"
)

// keyRefusedError is a 401/403 from a model provider.
type keyRefusedError struct{ status string }

func (e *keyRefusedError) Error() string { return "key refused (" + e.status + ")" }

// checkModels checks each configured model with its provider's model list
// (GET {base}/models): it proves the base URL and the key without spending
// a token. langchaingo, which ship's turns go through, has no call for the
// list, so it is plain net/http with the same headers langchaingo sends
// (Authorization: Bearer for OpenAI-compatible services; x-api-key and
// anthropic-version for Anthropic). Each service is asked once. A server
// without the list gets a 1-token call through ship's own client instead.
func checkModels(ctx context.Context, c llm.Config, client *http.Client) []checkResult {
	type service struct{ provider, base, key string }
	lists := map[service][]string{}
	errs := map[service]error{}
	var out []checkResult
	for _, e := range c.Entries() {
		m := e.Config
		check := "model " + e.Name
		keyVar := "LLM_API_KEY (llm.apiKey)"
		if !e.Default {
			keyVar = "llm.models." + e.Name + ".apiKey"
		}
		base := m.BaseURL
		switch m.Provider {
		case llm.ProviderOffline:
			out = append(out, pass(check, "the built-in offline model (no network, no key)"))
			continue
		case llm.ProviderOpenAI:
			if base == "" {
				base = openAIBase
			}
		case llm.ProviderAnthropic:
			if base == "" {
				base = anthropicBase
			}
		default:
			out = append(out, fail(check, fmt.Sprintf("unknown provider %q", m.Provider), "use openai, anthropic or offline"))
			continue
		}
		svc := service{m.Provider, base, m.APIKey}
		if _, asked := lists[svc]; !asked && errs[svc] == nil {
			lists[svc], errs[svc] = listModels(ctx, client, svc.provider, svc.base, svc.key)
		}
		host := hostOf(base)
		what := m.Provider + "/" + m.Model
		var refused *keyRefusedError
		switch err := errs[svc]; {
		case errors.As(err, &refused):
			out = append(out, fail(check, fmt.Sprintf("%s is refused by %s (%s)", keyVar, host, refused.status),
				"copy the API key again from the provider's console into "+keyVar))
		case errors.Is(err, errNoList):
			out = append(out, oneTokenCall(ctx, check, what, host, keyVar, m))
		case err != nil:
			out = append(out, fail(check, fmt.Sprintf("%s at %s: %v", what, host, err),
				"check llm.baseUrl (LLM_BASE_URL) and that this machine reaches it"))
		case !slices.Contains(lists[svc], m.Model):
			out = append(out, warn(check, fmt.Sprintf("%s: the key works, but %s does not list %q (it lists %s)", what, host, m.Model, sample(lists[svc])),
				"check the model name (llm.model or LLM_MODEL)"))
		default:
			out = append(out, pass(check, fmt.Sprintf("%s: %s accepts the key and lists the model", what, host)))
		}
	}
	return out
}

// statusCode finds the HTTP status in langchaingo's error ("API returned
// unexpected status code: 401: …"); the rest of the text is not shown, as
// OpenAI's 401 message quotes part of the key.
var statusCode = regexp.MustCompile(`status code: (\d{3})`)

// oneTokenCall asks the model for one token through ship's own client
// (runtime/llm, langchaingo): for OpenAI-compatible servers without a
// model list.
func oneTokenCall(ctx context.Context, check, what, host, keyVar string, c llm.Config) checkResult {
	model, err := llm.New(c)
	if err == nil {
		_, err = llms.GenerateFromSinglePrompt(ctx, model, "Say OK.", llms.WithMaxTokens(1))
	}
	if err == nil {
		return pass(check, fmt.Sprintf("%s at %s: no model list, but a 1-token call was answered", what, host))
	}
	m := statusCode.FindStringSubmatch(err.Error())
	switch {
	case m != nil && (m[1] == "401" || m[1] == "403"):
		return fail(check, fmt.Sprintf("%s is refused by %s (HTTP %s to a 1-token call)", keyVar, host, m[1]),
			"copy the API key again from the provider's console into "+keyVar)
	case m != nil:
		return fail(check, fmt.Sprintf("%s at %s: a 1-token call got HTTP %s", what, host, m[1]),
			"check the model name (llm.model or LLM_MODEL) and llm.baseUrl (LLM_BASE_URL)")
	case ctx.Err() != nil:
		return fail(check, fmt.Sprintf("%s at %s: no answer to a 1-token call in time", what, host),
			"check that this machine reaches it, or give a longer --timeout")
	}
	return fail(check, fmt.Sprintf("%s at %s: a 1-token call failed", what, host),
		"check llm.baseUrl (LLM_BASE_URL) and that this machine reaches it")
}

// errNoList is a provider without GET /models (404 or 405).
var errNoList = errors.New("no model list")

// listModels asks for the model ids. The answer's error body is never
// shown: OpenAI's 401 quotes part of the key.
func listModels(ctx context.Context, client *http.Client, provider, base, key string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/models", nil)
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	if provider == llm.ProviderAnthropic {
		req.Header.Set("X-Api-Key", key)
		req.Header.Set("Anthropic-Version", anthropicVersion)
	} else if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach it: %w", transportCause(err))
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the model list: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, &keyRefusedError{status: resp.Status}
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed:
		return nil, errNoList
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET /models answered %s", resp.Status)
	}
	// Both OpenAI ({"object":"list","data":[{"id"}]}) and Anthropic
	// ({"data":[{"id"}],"has_more"}) put the ids in data[].id; the first
	// page is enough to tell whether the key works.
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("the model list is not JSON: %w", err)
	}
	ids := make([]string, 0, len(list.Data))
	for _, d := range list.Data {
		ids = append(ids, d.ID)
	}
	return ids, nil
}

// transportCause is a network error without the URL (which may carry a
// token in its path, as the Bot API's does).
func transportCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func hostOf(base string) string {
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		return u.Host
	}
	return "the provider"
}

// sample is a few ids of a list, for a line.
func sample(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	if len(ids) > 5 {
		return strings.Join(ids[:5], ", ") + fmt.Sprintf(" and %d more", len(ids)-5)
	}
	return strings.Join(ids, ", ")
}
