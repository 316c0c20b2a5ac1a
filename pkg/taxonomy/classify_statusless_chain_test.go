package taxonomy_test

import (
	"fmt"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// reviewStatusErr is a foreign error type that opts in through
// HTTPStatusCode (taxonomy.StatusCoder).
type reviewStatusErr struct{ code int }

func (e reviewStatusErr) Error() string       { return fmt.Sprintf("upstream answered %d", e.code) }
func (e reviewStatusErr) HTTPStatusCode() int { return e.code }

// ClassifyError's contract (step 3): "A provider error without a status (0)
// does not decide; the walk continues with its causes", and StatusCoder's:
// "ClassifyError maps the status of any such error in the chain". An
// adapter's *model.ProviderError that carries no status of its own (as the
// sim and the OpenAI stream path build them) around an error that does say
// the status must be classified by that status. errors.As stops at the
// first StatusCoder in the chain (the status-less ProviderError itself), so
// the inner 503 is never read and the call is filed UNKNOWN: never retried,
// never replayed automatically.
func TestStatuslessProviderErrorDefersToItsCause(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want taxonomy.Class
	}{
		{"status-less ProviderError around a StatusCoder 503",
			&model.ProviderError{Provider: "custom", Err: reviewStatusErr{503}}, taxonomy.Server},
		{"status-less ProviderError around a ProviderError 429",
			&model.ProviderError{Provider: "outer", Err: &model.ProviderError{Provider: "inner", StatusCode: 429}}, taxonomy.RateLimited},
		{"status-less ProviderError around a StatusCoder 401",
			fmt.Errorf("call: %w", &model.ProviderError{Provider: "custom", Err: reviewStatusErr{401}}), taxonomy.Auth},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := taxonomy.ClassifyError(tc.err); got != tc.want {
				t.Fatalf("ClassifyError(%v) = %s, want %s (the status in the chain)", tc.err, got, tc.want)
			}
		})
	}
}
