package app

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// Only a start-up error that is the context's own ending is a clean stop;
// a genuine failure stays an error even when the context has ended since.
func TestStoppedWhileStarting(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	connect := errors.New("nats: connect nats://127.0.0.1:4222: no servers available for connection")
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"signal while waiting for NATS", cancelled, fmt.Errorf("%w (gave up: %w)", connect, context.Canceled), true},
		{"signal during a start-up step", cancelled, fmt.Errorf("streams: %w", context.Canceled), true},
		{"failure, no signal", context.Background(), connect, false},
		{"failure, then a signal", cancelled, connect, false},
		{"a step's own cancel, no signal", context.Background(), fmt.Errorf("redis: %w", context.Canceled), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stoppedWhileStarting(tc.ctx, tc.err); got != tc.want {
				t.Errorf("stoppedWhileStarting = %v, want %v", got, tc.want)
			}
		})
	}
}
