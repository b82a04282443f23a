package llm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// slowAnswer is 40 pieces of 5 bytes, one every 50 ms: about 2 s in all,
// never more than 50 ms apart.
var slowAnswer = strings.Repeat("word ", 40)

func startFake(t *testing.T, resp fakeopenai.Response) *fakeopenai.Server {
	t.Helper()
	srv, err := fakeopenai.Start(func(fakeopenai.Request) fakeopenai.Response { return resp })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func streamed(ctx context.Context, m llms.Model) (string, error) {
	var got strings.Builder
	resp, err := m.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")},
		llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
			got.Write(chunk)
			return nil
		}))
	if err != nil {
		return got.String(), err
	}
	return resp.Choices[0].Content, nil
}

func TestSlowSteadyStreamIsNotCutOff(t *testing.T) {
	srv := startFake(t, fakeopenai.Response{Content: slowAnswer, Pace: fakeopenai.Pace{Bytes: 5, Every: 50 * time.Millisecond}})

	// A whole-response cap, as http.Client.Timeout was, shorter than the
	// answer takes: the answer is cut off although it never paused long.
	capped, err := openai.New(openai.WithToken("k"), openai.WithBaseURL(srv.BaseURL()),
		openai.WithHTTPClient(&http.Client{Timeout: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streamed(t.Context(), capped); err == nil {
		t.Fatal("a 1 s whole-response cap let a 2 s answer through; the test proves nothing")
	}

	// Short first-byte and idle timeouts let it through.
	m, err := New(Config{Provider: ProviderOpenAI, BaseURL: srv.BaseURL(),
		Timeouts: Timeouts{ConnectSeconds: 1, FirstByteSeconds: 1, IdleSeconds: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := streamed(t.Context(), m)
	if err != nil {
		t.Fatalf("slow but steady answer failed: %v", err)
	}
	if got != slowAnswer {
		t.Fatalf("answer = %q, want %q", got, slowAnswer)
	}
}

func TestStalledStreamFailsWithIdleTimeout(t *testing.T) {
	srv := startFake(t, fakeopenai.Response{Content: slowAnswer,
		Pace: fakeopenai.Pace{Bytes: 5, Every: time.Millisecond, StallAfter: 3, Stall: time.Minute}})
	m, err := New(Config{Provider: ProviderOpenAI, BaseURL: srv.BaseURL(),
		Timeouts: Timeouts{FirstByteSeconds: 5, IdleSeconds: 0.3}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := streamed(t.Context(), m)
	if !errors.Is(err, ErrIdleTimeout) {
		t.Fatalf("err = %v, want ErrIdleTimeout", err)
	}
	// The runtime retries network timeouts: the error must say it is one.
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err = %v is not a net.Error timeout", err)
	}
	if got != "word word word " {
		t.Fatalf("streamed before the stall: %q", got)
	}
}

func TestSlowFirstByteFails(t *testing.T) {
	srv := startFake(t, fakeopenai.Response{Content: "late", Pace: fakeopenai.Pace{Every: time.Minute}})
	m, err := New(Config{Provider: ProviderOpenAI, BaseURL: srv.BaseURL(), Timeouts: Timeouts{FirstByteSeconds: 0.3}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = streamed(t.Context(), m)
	// langchaingo replaces a transport error by a plain one of its own;
	// the runtime retries any error that says "timeout".
	if err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("err = %v, want a timeout awaiting the answer", err)
	}
}

func TestTimeoutsValidateNamesTheField(t *testing.T) {
	cases := []struct {
		t    Timeouts
		hint string
	}{
		{Timeouts{ConnectSeconds: -1}, "llm.timeouts.connectSeconds (LLM_CONNECT_TIMEOUT)"},
		{Timeouts{FirstByteSeconds: 1e9}, "llm.timeouts.firstByteSeconds (LLM_FIRST_BYTE_TIMEOUT)"},
		{Timeouts{IdleSeconds: -0.5}, "llm.timeouts.idleSeconds (LLM_IDLE_TIMEOUT)"},
	}
	for _, c := range cases {
		err := c.t.Validate("llm.timeouts")
		if !errors.Is(err, ErrBadTimeout) || !strings.Contains(err.Error(), c.hint) {
			t.Errorf("%+v: err = %v, want ErrBadTimeout naming %s", c.t, err, c.hint)
		}
	}
	if err := (Timeouts{ConnectSeconds: 0.5, IdleSeconds: 600}).Validate("llm.timeouts"); err != nil {
		t.Errorf("valid timeouts: %v", err)
	}
}

func TestModelEntryInheritsTimeouts(t *testing.T) {
	c := Config{Provider: ProviderOpenAI, APIKey: "k", Timeouts: Timeouts{IdleSeconds: 5, FirstByteSeconds: 7},
		Models: map[string]Config{"local": {Timeouts: Timeouts{IdleSeconds: 600}}}}
	got := c.Entries()[1].Config.Timeouts
	want := Timeouts{IdleSeconds: 600, FirstByteSeconds: 7}
	if got != want {
		t.Errorf("entry timeouts = %+v, want %+v", got, want)
	}
	c.Models["local"] = Config{Timeouts: Timeouts{ConnectSeconds: -3}}
	err := c.ValidateModels()
	if !errors.Is(err, ErrBadTimeout) || !strings.Contains(err.Error(), "llm.models.local.timeouts.connectSeconds") {
		t.Errorf("err = %v, want one naming llm.models.local.timeouts.connectSeconds", err)
	}
}
