package agent_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The loop starts goroutines for parallel tool calls; none may outlive an
// invocation.
// opencensus (pulled in by the genai SDK, through pkg/taxonomy, which a
// test imports) starts a goroutine at init.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}
