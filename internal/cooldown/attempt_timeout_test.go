package cooldown_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/cooldown"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/providers/gemini"
	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// The classic provider outage is a provider that accepts requests and never
// answers. The chain the worker builds (app.ModelChain: retry around the
// cooldown around the provider) ends each such attempt after
// retry.Config.AttemptTimeout with a TIMEOUT, a class the cooldown counts as
// a failure (it is Retryable), and the timeouts must open the fleet
// cooldown. (The cooldown recorded the outcome with the attempt's own
// context, which had just expired, so Store.Record failed (Memory returned
// ctx.Err(), Redis's script run failed on the dead context) and the
// failure was dropped: a hung provider never opened the cooldown.)
func TestAttemptTimeoutsOpenTheCooldown(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			var requests atomic.Int32
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				_, _ = io.Copy(io.Discard, r.Body) // so the server notices the client going away
				select {                           // accepted, never answered
				case <-r.Context().Done():
				case <-release:
				}
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(release) }) // runs first
			ctx := context.Background()
			provider, err := gemini.New(ctx, gemini.Config{APIKey: "test-key", Model: "gemini-hung", BaseURL: srv.URL + "/"})
			if err != nil {
				t.Fatal(err)
			}
			isTransient := func(err error) bool { return taxonomy.PolicyFor(taxonomy.ClassifyError(err)).Retryable }
			guarded := cooldown.Wrap(provider, s, cfg(), isTransient) // MinCalls 10, threshold 0.5
			chain, err := retry.New(guarded, retry.Config{MaxAttempts: 1, AttemptTimeout: 50 * time.Millisecond, DisableBudget: true})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 10 {
				var callErr error
				for _, e := range chain.GenerateContent(ctx, &model.Request{Contents: []*model.Content{model.NewTextContent(model.RoleUser, "hi")}}, false) {
					callErr = e
				}
				if c := taxonomy.ClassifyError(callErr); c != taxonomy.Timeout {
					t.Fatalf("call %d: class %s, want TIMEOUT (err %v)", i+1, c, callErr)
				}
			}
			if n := requests.Load(); n != 10 {
				t.Fatalf("provider requests = %d, want 10", n)
			}
			until, err := s.Status(ctx, "gemini-hung")
			if err != nil {
				t.Fatal(err)
			}
			if until.IsZero() {
				t.Errorf("10 of 10 attempts timed out (TIMEOUT, a transient class) but the cooldown is closed: the timeouts were never recorded")
			}
			// The next call should be refused without reaching the provider.
			for _, e := range chain.GenerateContent(ctx, &model.Request{Contents: []*model.Content{model.NewTextContent(model.RoleUser, "hi")}}, false) {
				var oe *cooldown.OpenError
				if !errors.As(e, &oe) {
					t.Errorf("call 11: err = %v, want *cooldown.OpenError (provider requests now %d)", e, requests.Load())
				}
			}
		})
	}
}
