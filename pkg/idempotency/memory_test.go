package idempotency_test

import (
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/idempotency/idempotencytest"
)

func TestMemoryConformance(t *testing.T) {
	idempotencytest.Run(t, idempotencytest.Factory{
		New: func(t *testing.T, retention time.Duration) idempotencytest.Instance {
			return idempotencytest.Instance{Store: idempotency.NewMemory()}
		},
		MinRetention: 200 * time.Millisecond,
	})
}
