package taxonomy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, twenty-third session): the callbacks'
// "llm error" log line logged the error text as it was, so an endpoint that
// did not resolve or refused the connection put the internal host name,
// its port and the resolver's IP address in the log.
//
// The line now carries the raw message sanitised (tool.SanitizeString),
// keeping the promise that no log line leaks a host (README: the worker's
// reason is sanitised "for the entry, the record and the log lines").
func TestLLMErrorLogLineDoesNotLeakHosts(t *testing.T) {
	// The shape net/http returns for an unresolvable base URL (Go's own
	// types, as a real lookup through an internal resolver produces them).
	dns := &url.Error{Op: "Post", URL: "https://llm-gateway.corp.internal:8443/v1/chat/completions",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{
			Err: "no such host", Name: "llm-gateway.corp.internal", Server: "10.20.30.40:53", IsNotFound: true}}}

	// A real refused connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, refused := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader("{}"))
	if refused == nil {
		t.Fatal("expected a dial error")
	}

	for _, c := range []struct {
		name   string
		err    error
		leaks  []string
		expect taxonomy.Class
	}{
		{"unresolvable internal host", dns, []string{"llm-gateway.corp.internal", "10.20.30.40"}, taxonomy.NotFound},
		{"refused connection", refused, []string{addr}, taxonomy.Transport},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			cb := taxonomy.OnModelError(taxonomy.CallbackOptions{Model: "gpt-x", Logger: zerolog.New(&logs)})
			_, _ = cb(context.Background(), nil, &model.Request{Model: "gpt-x"}, c.err)
			var line map[string]any
			if err := json.Unmarshal(bytes.TrimSpace(logs.Bytes()), &line); err != nil {
				t.Fatalf("want one JSON log line, got %q: %v", logs.String(), err)
			}
			if line["class"] != string(c.expect) {
				t.Fatalf("class %v, want %s (line %v)", line["class"], c.expect, line)
			}
			for _, s := range c.leaks {
				if strings.Contains(logs.String(), s) {
					t.Errorf("the %q log line (level %v) leaks %q: %s", line["message"], line["level"], s, strings.TrimSpace(logs.String()))
				}
			}
		})
	}
}
