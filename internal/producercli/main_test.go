package producercli_test

import (
	"testing"

	"go.uber.org/goleak"
)

// opencensus (pulled in by the genai SDK, through internal/worker, which a
// test runs for real) starts a goroutine at init.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}
