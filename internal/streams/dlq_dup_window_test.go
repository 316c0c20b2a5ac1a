package streams_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
)

// DESIGN.md: a DLQ entry's Nats-Msg-Id is dlq-<invocation_id>-<n> "so a
// crash between publish and ack makes no duplicate". The second publish of
// that entry comes from the redelivery, which the server sends no earlier
// than the worker consumer's AckWait after the crash. With an AckWait at
// least as long as the DLQ's duplicate window the de-duplication can never
// hold, yet Validate only bounds the window by the max age. Ensure must
// refuse such a configuration, or widen the DLQ's window past AckWait.
func TestDLQDuplicateWindowCoversAckWait(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	cfg := streams.Config{WorkerAckWait: 15 * time.Minute}.WithDefaults() // DLQDuplicates: default 10m
	_, err := streams.Ensure(ctx, js, cfg)
	if errors.Is(err, streams.ErrInvalidConfig) {
		return // refused: correct
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, cfg.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	if dup := s.CachedInfo().Config.Duplicates; dup <= cfg.WorkerAckWait {
		t.Fatalf("Ensure accepted WorkerAckWait %v with a DLQ duplicate window of %v: a dead letter re-published by the redelivery after a crash is never de-duplicated",
			cfg.WorkerAckWait, dup)
	}
}
