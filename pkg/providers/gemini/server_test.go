package gemini

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// recorded is one request the fake Gemini server received.
type recorded struct {
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
}

// fakeGemini is an httptest server speaking the Gemini REST wire format.
type fakeGemini struct {
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []recorded
	handler func(w http.ResponseWriter, r *http.Request)
}

func newFake(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *fakeGemini {
	t.Helper()
	f := &fakeGemini{handler: handler}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
		f.mu.Unlock()
		f.handler(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGemini) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

func (f *fakeGemini) last(t *testing.T) recorded {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		t.Fatal("server received no request")
	}
	return f.reqs[len(f.reqs)-1]
}

// jsonHandler answers every request with status and body.
func jsonHandler(status int, body string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// sseHandler writes each event as a Gemini SSE event ("data: ...\r\n\r\n"),
// flushing after each, then ends the response cleanly.
func sseHandler(events ...string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			_, _ = io.WriteString(w, "data: "+e+"\r\n\r\n")
			w.(http.Flusher).Flush()
		}
	}
}

// abortHandler writes events, flushes, then drops the TCP connection
// without finishing the chunked body.
func abortHandler(events ...string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			_, _ = io.WriteString(w, "data: "+e+"\r\n\r\n")
		}
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_ = conn.Close()
	}
}

func newTestModel(t *testing.T, f *fakeGemini, mut ...func(*Config)) *Model {
	t.Helper()
	cfg := Config{APIKey: "test-key", Model: "gemini-2.5-flash", BaseURL: f.srv.URL}
	for _, m := range mut {
		m(&cfg)
	}
	m, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// collect runs one call and returns everything it yielded.
func collect(ctx context.Context, m model.Model, req *model.Request, stream bool) (resps []*model.Response, errs []error) {
	for r, err := range m.GenerateContent(ctx, req, stream) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		resps = append(resps, r)
	}
	return resps, errs
}

// one runs a non-streaming call and requires exactly one yielded pair.
func one(t *testing.T, m model.Model, req *model.Request) (*model.Response, error) {
	t.Helper()
	resps, errs := collect(testCtx(t), m, req, false)
	if len(resps)+len(errs) != 1 {
		t.Fatalf("non-streaming call yielded %d responses and %d errors, want exactly one", len(resps), len(errs))
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	return resps[0], nil
}

func userText(s string) *model.Request {
	return &model.Request{Contents: []*model.Content{model.NewTextContent(model.RoleUser, s)}}
}

// bodyMap decodes a recorded JSON request body.
func bodyMap(t *testing.T, rec recorded) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rec.Body, &m); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, rec.Body)
	}
	return m
}

// dig walks a decoded JSON value by map keys and slice indexes.
func dig(t *testing.T, v any, path ...any) any {
	t.Helper()
	cur := v
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("dig %v: %T is not an object at %q", path, cur, k)
			}
			cur = m[k]
		case int:
			s, ok := cur.([]any)
			if !ok || k >= len(s) {
				t.Fatalf("dig %v: no index %d in %T", path, k, cur)
			}
			cur = s[k]
		}
	}
	return cur
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
