package streams_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
)

// Regression (found in review, twenty-fourth session): nothing related
// ResultsMaxAge to RequestDuplicates. With results kept for less than the
// requests' duplicate window, a result ages out while its request's id is
// still in the window: a resubmission (a batch rerun of a completed line)
// finds no stored result, is dropped by the server as a duplicate, and no
// worker ever answers it, so the rerun waits out its timeout for an
// invocation that completed (TestBatchRerunAfterTheResultAgedOutIsNotATimeout
// in internal/producercli shows it end to end). Validate (run by the worker
// at start, app.CheckDerived: exit 2) and Ensure refuse such a
// configuration, before any stream is made.
func TestResultsMaxAgeMustOutliveTheRequestsDuplicateWindow(t *testing.T) {
	for _, tc := range []struct {
		window, age time.Duration
		ok          bool
	}{
		{time.Hour, time.Second, false},
		{10 * time.Minute, 10 * time.Minute, false}, // equal: no slack for the server's purge
		{10 * time.Minute, 10*time.Minute + streams.ResultsAgeSlack - time.Second, false},
		{10 * time.Minute, 10*time.Minute + streams.ResultsAgeSlack, true},
		{0, 0, true}, // the defaults: 10m and 24h
	} {
		cfg := streams.Config{RequestDuplicates: tc.window, ResultsMaxAge: tc.age}.WithDefaults()
		err := cfg.Validate()
		var ce *streams.ConfigError
		switch {
		case tc.ok && err != nil:
			t.Errorf("window %v, results max age %v: refused (%v), want accepted", cfg.RequestDuplicates, cfg.ResultsMaxAge, err)
		case !tc.ok && (!errors.As(err, &ce) || ce.Field != "ResultsMaxAge"):
			t.Errorf("window %v, results max age %v: %v, want a ResultsMaxAge ConfigError", cfg.RequestDuplicates, cfg.ResultsMaxAge, err)
		}
	}

	js, _, _ := natstest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := streams.Config{RequestDuplicates: time.Hour, ResultsMaxAge: time.Second}
	if _, err := streams.Ensure(ctx, js, cfg); !errors.Is(err, streams.ErrInvalidConfig) {
		t.Fatalf("Ensure with a 1s results max age and a 1h duplicate window: %v, want ErrInvalidConfig", err)
	}
	if _, err := js.Stream(ctx, cfg.WithDefaults().ResultsStream); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("results stream after the refused Ensure: %v, want none made", err)
	}
}
