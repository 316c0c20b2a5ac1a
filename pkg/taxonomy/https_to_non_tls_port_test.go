package taxonomy_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/providers/openai"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review of this session's fix, twenty-third session):
// an https base URL whose port speaks neither TLS nor HTTP (a wrong port:
// SSH, Redis, a database) failed every call with tls.RecordHeaderError
// "first record does not look like a TLS handshake" and was TRANSPORT:
// retried and auto-replayed for ever, never paged, although net/http's
// http.ErrSchemeMismatch for the same mistake against an HTTP port had
// just been made NOT_FOUND.
//
// net/http turns only a bare RecordHeaderError whose bytes are "HTTP/"
// into ErrSchemeMismatch; crypto/tls sets its Conn only when the peer's
// first record is not TLS at all, which is what ClassifyError now goes by.
func TestHTTPSToNonTLSNonHTTPPortIsNotRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n"))
			_ = c.Close()
		}
	}()
	m, err := openai.New(openai.Config{Model: "gpt-x", BaseURL: "https://" + ln.Addr().String() + "/v1/"})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Contents: []*model.Content{model.NewTextContent(model.RoleUser, "hi")}}
	var callErr error
	for _, err := range m.GenerateContent(context.Background(), req, false) {
		if err != nil {
			callErr = err
		}
	}
	var rh tls.RecordHeaderError
	if !errors.As(callErr, &rh) || rh.Conn == nil {
		t.Fatalf("want a first-record tls.RecordHeaderError from a real request, got %v", callErr)
	}
	c := taxonomy.ClassifyError(callErr)
	p := taxonomy.PolicyFor(c)
	if p.Retryable || p.AutoReplay {
		t.Fatalf("ClassifyError(%v) = %s (retryable=%v, auto-replay=%v): an https URL to a port that does not speak TLS is retried and replayed for ever instead of paging",
			callErr, c, p.Retryable, p.AutoReplay)
	}
	if c != taxonomy.NotFound {
		t.Errorf("ClassifyError(%v) = %s, want %s (like http.ErrSchemeMismatch)", callErr, c, taxonomy.NotFound)
	}
	// A scheme mismatch behind a RoundTripper that wraps the error (net/http
	// converts only a bare RecordHeaderError) is the same mistake.
	wrapped := fmt.Errorf("Post %q: %w", "https://x/v1", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake", RecordHeader: [5]byte{'H', 'T', 'T', 'P', '/'}, Conn: rh.Conn})
	if c := taxonomy.ClassifyError(wrapped); c != taxonomy.NotFound {
		t.Errorf("ClassifyError(wrapped scheme mismatch) = %s, want %s", c, taxonomy.NotFound)
	}
	// A record header error after the handshake began (Conn nil: an
	// oversized record) is not decided by this rule.
	mid := fmt.Errorf("read: %w", tls.RecordHeaderError{Msg: "oversized record received with length 20000"})
	if c := taxonomy.ClassifyError(mid); c == taxonomy.NotFound {
		t.Errorf("ClassifyError(%v) = %s: a mid-stream record error is not a misconfigured endpoint", mid, c)
	}
}
