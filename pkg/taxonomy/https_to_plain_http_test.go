package taxonomy_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, twenty-third session): an https base URL
// for an endpoint that speaks plain HTTP (net/http's http.ErrSchemeMismatch,
// "server gave HTTP response to HTTPS client") was TRANSPORT, so it was
// retried, dead-lettered for automatic replay and replayed for ever without
// ever paging.
//
// Like a host name that does not exist (ClassifyError step 5, README "A
// misconfigured endpoint was retried and replayed forever"), retrying
// cannot fix it: it is now NOT_FOUND, which pages and is neither retried
// nor replayed automatically.
func TestHTTPSToPlainHTTPEndpointIsNotRetried(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	_, err := http.Post("https://"+srv.Listener.Addr().String()+"/v1/chat/completions", "application/json", strings.NewReader("{}"))
	if !errors.Is(err, http.ErrSchemeMismatch) {
		t.Fatalf("want http.ErrSchemeMismatch from a real request, got %v", err)
	}
	c := taxonomy.ClassifyError(err)
	p := taxonomy.PolicyFor(c)
	if p.Retryable || p.AutoReplay {
		t.Fatalf("ClassifyError(%v) = %s (retryable=%v, auto-replay=%v): a misconfigured endpoint is retried and replayed for ever instead of escalated",
			err, c, p.Retryable, p.AutoReplay)
	}
}
