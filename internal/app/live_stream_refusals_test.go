package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
)

// Regression (found in review, nineteenth session): an existing deployment whose streams were made with settings the server
// cannot change on a live stream (AGENT_REQUESTS made by hand with
// `nats stream add`'s limits retention, AGENT_RESULTS on memory storage)
// can never be started against: streams.Ensure fails on every start with
// the server's "stream configuration update can not change retention
// policy" / "... storage type" (JetStream error code 10052, on the machine's
// NATS 2.9 as on the current server). So can a deployment whose work-queue
// requests stream is still consumed by the consumer of an earlier
// streams.consumer name ("filtered consumer not unique on workqueue
// stream", 10100). Connect maps the other refusals of
// the live server to ErrBadConfig (another subject prefix, a retention
// shorter than the live DLQ, replicas > 1 on an unclustered server: exit 2,
// TestLiveConfigurationRefusalsExitTwo, TestReplicasOnUnclusteredServerExitsTwo)
// but not these: the worker exits 1 ("streams: ..."), which a supervisor
// restarts for ever as if NATS had been briefly unavailable.
// Correct: a stream setting the live server refuses to change is bad
// configuration, exit 2 (the operator must re-create the stream or point
// the worker at other stream names), decided by the error's code, with
// what to do on stderr. So is another stream on the requests' subjects
// (10065: a second fleet with other stream names and the same prefixes).
func TestLiveStreamSettingsTheServerCannotChangeExitTwo(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(cfg config.Worker) jetstream.StreamConfig
		// consumer, if set, is a consumer the deployment already has.
		consumer func(cfg config.Worker) jetstream.ConsumerConfig
		// want are in the worker's stderr: what the operator must do.
		want []string
	}{
		{name: "requests stream with limits retention", build: func(cfg config.Worker) jetstream.StreamConfig {
			sc := StreamsConfig(cfg).RequestsStreamConfig()
			sc.Retention = jetstream.LimitsPolicy
			return sc
		}, want: []string{"AGENT_REQUESTS", "err_code=10052", "nats stream rm"}},
		{name: "results stream on memory storage", build: func(cfg config.Worker) jetstream.StreamConfig {
			sc := StreamsConfig(cfg).ResultsStreamConfig()
			sc.Storage = jetstream.MemoryStorage
			return sc
		}, want: []string{"AGENT_RESULTS", "err_code=10052", "nats stream rm"}},
		{name: "requests stream consumed by the consumer of an earlier streams.consumer name", build: func(cfg config.Worker) jetstream.StreamConfig {
			return StreamsConfig(cfg).RequestsStreamConfig()
		}, consumer: func(cfg config.Worker) jetstream.ConsumerConfig {
			cc := StreamsConfig(cfg).WorkerConsumerConfig()
			cc.Durable = "workers-old"
			return cc
		}, want: []string{"err_code=10100", "workers-old", "nats consumer rm"}},
		{name: "another stream on the requests' subjects", build: func(cfg config.Worker) jetstream.StreamConfig {
			sc := StreamsConfig(cfg).RequestsStreamConfig()
			sc.Name = "OTHER_FLEET_REQUESTS"
			return sc
		}, want: []string{"err_code=10065", "streams.request_prefix"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js, _, srv := natstest.JetStream(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cfg := config.DefaultWorker()
			cfg.Embedded.Enabled, cfg.NATS.URL = false, srv.ClientURL()
			// The stream as it exists in the deployment before this worker.
			if _, err := js.CreateStream(ctx, tc.build(cfg)); err != nil {
				t.Fatal(err)
			}
			if tc.consumer != nil {
				cc := tc.consumer(cfg)
				if _, err := js.CreateConsumer(ctx, cfg.Streams.Requests, cc); err != nil {
					t.Fatal(err)
				}
			}

			t.Setenv("AGENTFLEET_NATS_URL", srv.ClientURL())
			t.Setenv("AGENTFLEET_METRICS_ADDR", "")
			t.Setenv("AGENTFLEET_LOG_LEVEL", "error")
			var out, errOut bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- WorkerMain([]string{"--name", "w-review-live-stream"}, &out, &errOut) }()
			select {
			case code := <-done:
				if code != 2 {
					t.Errorf("exit code %d, want 2 (bad configuration: the live server refuses this stream setting on every start); stderr: %s", code, errOut.String())
				}
				for _, w := range tc.want {
					if !strings.Contains(errOut.String(), w) {
						t.Errorf("stderr does not say %q: %s", w, errOut.String())
					}
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the worker started and ran")
			}
		})
	}
}

// ServerRefusal decides by the JetStream error code, never by the message:
// the refusals a restart cannot change match ErrBadConfig, and an error of
// another code with the same text, or no API error at all, is not one.
func TestServerRefusalIsDecidedByTheErrorCode(t *testing.T) {
	for _, tc := range []struct {
		code jetstream.ErrorCode
		bad  bool
	}{
		{JSStreamInvalidConfig, true}, {JSConsumerWQNotUnique, true}, {JSConsumerWQMultipleUnfiltered, true},
		{JSStreamSubjectOverlap, true}, {JSReplicasNotSupported, true},
		{10008, false}, // JSClusterNotAvailErr: a cluster without a leader, which comes back
		{10077, false}, // JSStreamStoreFailedF
	} {
		apiErr := &jetstream.APIError{Code: 500, ErrorCode: tc.code, Description: "stream configuration update can not change storage type"}
		err := fmt.Errorf("streams: create or update stream S: %w", apiErr)
		got := ServerRefusal(err)
		if (got != nil) != tc.bad || (got != nil && !errors.Is(got, ErrBadConfig)) {
			t.Errorf("code %d: ServerRefusal = %v, want bad configuration %v", tc.code, got, tc.bad)
		}
		if got != nil && !errors.Is(got, apiErr) {
			t.Errorf("code %d: ServerRefusal lost the server's error: %v", tc.code, got)
		}
	}
	if got := ServerRefusal(errors.New("nats: API error: code=500 err_code=10052 description=stream configuration update can not change storage type")); got != nil {
		t.Errorf("a message without an API error: ServerRefusal = %v, want nil", got)
	}
	if got := ServerRefusal(nil); got != nil {
		t.Errorf("ServerRefusal(nil) = %v", got)
	}
}
