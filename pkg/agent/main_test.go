package agent_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The loop starts goroutines for parallel tool calls; none may outlive an
// invocation.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
