package streams_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
)

func TestKeepLive(t *testing.T) {
	const day = 24 * time.Hour
	cases := []struct {
		name         string
		live, want   jetstream.StreamConfig
		keep         streams.Keep
		replicas     int
		maxAge       time.Duration
		keptReplicas int
		keptMaxAge   bool
	}{
		{"fewer replicas asked: kept", jetstream.StreamConfig{Replicas: 3}, jetstream.StreamConfig{Replicas: 1}, streams.Keep{}, 3, 0, 3, false},
		{"zero replicas asked (server default 1): kept", jetstream.StreamConfig{Replicas: 3}, jetstream.StreamConfig{}, streams.Keep{}, 3, 0, 3, false},
		{"more replicas asked: raised", jetstream.StreamConfig{Replicas: 1}, jetstream.StreamConfig{Replicas: 3}, streams.Keep{}, 3, 0, 0, false},
		{"same replicas", jetstream.StreamConfig{Replicas: 3}, jetstream.StreamConfig{Replicas: 3}, streams.Keep{}, 3, 0, 0, false},
		{"shorter max age, not kept", jetstream.StreamConfig{Replicas: 1, MaxAge: 30 * day}, jetstream.StreamConfig{Replicas: 1, MaxAge: 7 * day}, streams.Keep{}, 1, 7 * day, 0, false},
		{"shorter max age, kept", jetstream.StreamConfig{Replicas: 1, MaxAge: 30 * day}, jetstream.StreamConfig{Replicas: 1, MaxAge: 7 * day}, streams.Keep{MaxAge: true}, 1, 30 * day, 0, true},
		{"unlimited kept", jetstream.StreamConfig{Replicas: 1}, jetstream.StreamConfig{Replicas: 1, MaxAge: 7 * day}, streams.Keep{MaxAge: true}, 1, 0, 0, true},
		{"longer asked: raised", jetstream.StreamConfig{Replicas: 1, MaxAge: 7 * day}, jetstream.StreamConfig{Replicas: 1, MaxAge: 30 * day}, streams.Keep{MaxAge: true}, 1, 30 * day, 0, false},
		{"unlimited asked: raised", jetstream.StreamConfig{Replicas: 1, MaxAge: 7 * day}, jetstream.StreamConfig{Replicas: 1}, streams.Keep{MaxAge: true}, 1, 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := streams.KeepLive(tc.live, tc.want, tc.keep)
			if got.Config.Replicas != tc.replicas || got.Config.MaxAge != tc.maxAge || got.KeptReplicas != tc.keptReplicas || got.KeptMaxAge != tc.keptMaxAge {
				t.Errorf("KeepLive = replicas %d max age %v kept %d/%v, want %d %v kept %d/%v",
					got.Config.Replicas, got.Config.MaxAge, got.KeptReplicas, got.KeptMaxAge, tc.replicas, tc.maxAge, tc.keptReplicas, tc.keptMaxAge)
			}
		})
	}
}

// TestEnsureNeverScalesStreamsDown runs on a real three-node JetStream
// cluster: the fleet's streams are R3, and a process left on the defaults
// (one replica) ensures them again. Before the rule, CreateOrUpdateStream
// scaled every stream down to one copy.
func TestEnsureNeverScalesStreamsDown(t *testing.T) {
	js, _ := natstest.ClusterJetStream(t, 3)

	fleet := streams.Config{Replicas: 3}
	natstest.Retry(t, time.Minute, func(ctx context.Context) error { _, err := streams.Ensure(ctx, js, fleet); return err })
	names := []string{streams.DefaultRequestsStream, streams.DefaultResultsStream, streams.DefaultDLQStream}
	for _, n := range names {
		if r := streamReplicas(t, js, n); r != 3 {
			t.Fatalf("%s created with %d replicas, want 3", n, r)
		}
	}

	var applied []streams.Applied
	natstest.Retry(t, time.Minute, func(ctx context.Context) (err error) {
		applied, err = streams.Ensure(ctx, js, streams.Config{}) // the defaults: one replica
		return err
	})
	for _, n := range names {
		if r := streamReplicas(t, js, n); r != 3 {
			t.Errorf("%s scaled to %d replicas by a process on the defaults, want 3 kept", n, r)
		}
	}
	if len(applied) != 3 {
		t.Fatalf("Ensure applied %d streams, want 3", len(applied))
	}
	for _, a := range applied {
		if a.KeptReplicas != 3 {
			t.Errorf("%s: KeptReplicas %d, want 3 (the caller logs it)", a.Config.Name, a.KeptReplicas)
		}
	}
}

// TestEnsureRaisesReplicas: raising still happens (a fleet moving to R3).
func TestEnsureRaisesReplicas(t *testing.T) {
	js, _ := natstest.ClusterJetStream(t, 3)
	natstest.Retry(t, time.Minute, func(ctx context.Context) error {
		_, err := streams.Ensure(ctx, js, streams.Config{Replicas: 1})
		return err
	})
	var applied []streams.Applied
	natstest.Retry(t, time.Minute, func(ctx context.Context) (err error) {
		applied, err = streams.Ensure(ctx, js, streams.Config{Replicas: 3})
		return err
	})
	for _, a := range applied {
		if a.KeptReplicas != 0 {
			t.Errorf("%s: KeptReplicas %d when raising", a.Config.Name, a.KeptReplicas)
		}
		if r := streamReplicas(t, js, a.Config.Name); r != 3 {
			t.Errorf("%s has %d replicas, want 3", a.Config.Name, r)
		}
	}
}

func streamReplicas(t *testing.T, js jetstream.JetStream, name string) int {
	t.Helper()
	s, err := js.Stream(context.Background(), name)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	return s.CachedInfo().Config.Replicas
}

// TestKeepLivePlacement: a placement set on the server (tags, a cluster)
// stays when the configuration sets none, so a later raise places the new
// copies where the operator pinned the stream.
func TestKeepLivePlacement(t *testing.T) {
	pinned := &jetstream.Placement{Cluster: "east", Tags: []string{"ssd"}}
	got := streams.KeepLive(jetstream.StreamConfig{Replicas: 3, Placement: pinned}, jetstream.StreamConfig{Replicas: 1}, streams.Keep{})
	if got.Config.Placement != pinned {
		t.Errorf("placement %+v, want the live one kept", got.Config.Placement)
	}
	own := &jetstream.Placement{Cluster: "west"}
	got = streams.KeepLive(jetstream.StreamConfig{Replicas: 3, Placement: pinned}, jetstream.StreamConfig{Replicas: 3, Placement: own}, streams.Keep{})
	if got.Config.Placement != own {
		t.Errorf("placement %+v, want the configured one", got.Config.Placement)
	}
}
