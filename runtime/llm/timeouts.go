package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"time"
)

// Timeouts bound the waits on a model's server. There is deliberately no
// cap on a whole answer: a slow model (Ollama on a CPU) may take minutes to
// stream a long one, and that is fine as long as it keeps writing. The run
// as a whole is still bounded by queue.runTimeoutSeconds.
type Timeouts struct {
	// ConnectSeconds bounds opening the connection (TCP and TLS). 0 →
	// DefaultConnectTimeout.
	ConnectSeconds float64 `json:"connectSeconds,omitempty"`
	// FirstByteSeconds bounds the wait for the answer to begin (its HTTP
	// response headers). A call that is not streamed gets its headers only
	// with the whole answer, so this also bounds such an answer. 0 →
	// DefaultFirstByteTimeout.
	FirstByteSeconds float64 `json:"firstByteSeconds,omitempty"`
	// IdleSeconds bounds the silence between two pieces of an answer
	// being read. 0 → DefaultIdleTimeout.
	IdleSeconds float64 `json:"idleSeconds,omitempty"`
}

// Timeout defaults and bound.
const (
	DefaultConnectTimeout   = 10 * time.Second
	DefaultFirstByteTimeout = 300 * time.Second
	DefaultIdleTimeout      = 60 * time.Second
	MaxTimeout              = time.Hour
)

// ErrBadTimeout is wrapped by Timeouts.Validate.
var ErrBadTimeout = errors.New("invalid model timeout")

// ErrIdleTimeout is wrapped by the error of a read that waited longer than
// Timeouts.IdleSeconds. It is a net.Error with Timeout() true, so the
// runtime retries the call like any other network timeout.
var ErrIdleTimeout error = idleTimeoutError{}

type idleTimeoutError struct{}

func (idleTimeoutError) Error() string {
	return "model server sent nothing for longer than the idle timeout"
}
func (idleTimeoutError) Timeout() bool   { return true }
func (idleTimeoutError) Temporary() bool { return true }

// normalized fills in the defaults of t's unset fields.
func (t Timeouts) normalized() Timeouts {
	def := func(v *float64, d time.Duration) {
		if *v == 0 {
			*v = d.Seconds()
		}
	}
	def(&t.ConnectSeconds, DefaultConnectTimeout)
	def(&t.FirstByteSeconds, DefaultFirstByteTimeout)
	def(&t.IdleSeconds, DefaultIdleTimeout)
	return t
}

// or returns t with each unset field taken from d (a model entry inherits
// the top-level llm's timeouts field by field).
func (t Timeouts) or(d Timeouts) Timeouts {
	for _, f := range []struct{ v, d *float64 }{
		{&t.ConnectSeconds, &d.ConnectSeconds},
		{&t.FirstByteSeconds, &d.FirstByteSeconds},
		{&t.IdleSeconds, &d.IdleSeconds},
	} {
		if *f.v == 0 {
			*f.v = *f.d
		}
	}
	return t
}

// Validate reports the first field of t out of range, named as it is in
// ship.json under where ("llm.timeouts", "llm.models.NAME.timeouts") and,
// for the default model's, by its environment variable.
func (t Timeouts) Validate(where string) error {
	for _, f := range []struct {
		name, env string
		v         float64
	}{
		{"connectSeconds", "LLM_CONNECT_TIMEOUT", t.ConnectSeconds},
		{"firstByteSeconds", "LLM_FIRST_BYTE_TIMEOUT", t.FirstByteSeconds},
		{"idleSeconds", "LLM_IDLE_TIMEOUT", t.IdleSeconds},
	} {
		if f.v < 0 || f.v > MaxTimeout.Seconds() || math.IsNaN(f.v) {
			name := where + "." + f.name
			if where == "llm.timeouts" { // the environment sets only the default model's
				name += " (" + f.env + ")"
			}
			return fmt.Errorf("%w: %s is %g; it must be a number of seconds between 0 (the default) and %g",
				ErrBadTimeout, name, f.v, MaxTimeout.Seconds())
		}
	}
	return nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// httpClient returns the client that calls the model: connect and
// first-byte timeouts on the transport, the idle timeout on every read of
// a response body, and no http.Client.Timeout, which would also cut off a
// long answer still streaming steadily.
func httpClient(t Timeouts) *http.Client {
	t = t.normalized()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	dialer := &net.Dialer{Timeout: seconds(t.ConnectSeconds), KeepAlive: 30 * time.Second}
	tr.DialContext = dialer.DialContext
	tr.TLSHandshakeTimeout = seconds(t.ConnectSeconds)
	tr.ResponseHeaderTimeout = seconds(t.FirstByteSeconds)
	return &http.Client{Transport: idleTransport{next: tr, idle: seconds(t.IdleSeconds)}}
}

// idleTransport gives each response body an idle timeout.
type idleTransport struct {
	next http.RoundTripper
	idle time.Duration
}

func (t idleTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// The request gets a context of its own: cancelling it is the one way
	// to interrupt a read blocked on the connection.
	ctx, cancel := context.WithCancelCause(req.Context())
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel(nil)
		return nil, err
	}
	// The timer is made unarmed (it would fire in centuries): each Read
	// arms it for idle and disarms it when the read returns.
	b := &idleBody{rc: resp.Body, ctx: ctx, cancel: cancel, idle: t.idle,
		timer: time.AfterFunc(math.MaxInt64, func() { cancel(ErrIdleTimeout) })}
	resp.Body = b
	return resp, nil
}

// idleBody is a response body whose every Read must return within idle.
// The clock runs only while a Read waits: a reader that is slow to ask for
// more is not the server's silence.
type idleBody struct {
	rc     io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	idle   time.Duration
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.timer.Reset(b.idle)
	n, err := b.rc.Read(p)
	b.timer.Stop()
	if err != nil && errors.Is(context.Cause(b.ctx), ErrIdleTimeout) {
		return n, fmt.Errorf("reading the model's answer: %w", ErrIdleTimeout)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	err := b.rc.Close()
	b.cancel(nil)
	return err
}
