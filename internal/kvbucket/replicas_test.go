package kvbucket_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/kvbucket"
	"github.com/agentfleet/agentfleet/internal/natstest"
)

// TestOpenNeverLowersReplicas runs on a real three-node JetStream cluster:
// an R3 bucket opened in any mode by a process on the defaults (one
// replica) keeps its three copies, and one asking for more raises it.
// (Existing never writes, so its subtest guards that, not the rule.)
func TestOpenNeverLowersReplicas(t *testing.T) {
	js, _ := natstest.ClusterJetStream(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	replicas := func(bucket string) int {
		t.Helper()
		kv, err := js.KeyValue(ctx, bucket)
		if err != nil {
			t.Fatal(err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Config().Replicas
	}
	for _, m := range []kvbucket.Mode{kvbucket.Configure, kvbucket.KeepLonger, kvbucket.Existing} {
		t.Run(m.String(), func(t *testing.T) {
			bucket := map[kvbucket.Mode]string{kvbucket.Configure: "R3_CONFIGURE", kvbucket.KeepLonger: "R3_KEEPLONGER", kvbucket.Existing: "R3_EXISTING"}[m]
			natstest.Retry(t, time.Minute, func(ctx context.Context) error {
				_, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, History: 1, TTL: time.Hour, Replicas: 3})
				return err
			})
			if r := replicas(bucket); r != 3 {
				t.Fatalf("created with %d replicas", r)
			}
			natstest.Retry(t, time.Minute, func(ctx context.Context) error {
				_, _, err := kvbucket.Open(ctx, js, jetstream.KeyValueConfig{Bucket: bucket, History: 1, TTL: time.Hour, Replicas: 1}, m)
				return err
			})
			if r := replicas(bucket); r != 3 {
				t.Errorf("Open(%v) with one replica left the bucket at %d replicas, want 3", m, r)
			}
		})
	}
	t.Run("raises", func(t *testing.T) {
		natstest.Retry(t, time.Minute, func(ctx context.Context) error {
			_, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "R1", History: 1, Replicas: 1})
			return err
		})
		natstest.Retry(t, time.Minute, func(ctx context.Context) error {
			_, _, err := kvbucket.Open(ctx, js, jetstream.KeyValueConfig{Bucket: "R1", History: 1, Replicas: 3}, kvbucket.Configure)
			return err
		})
		if r := replicas("R1"); r != 3 {
			t.Errorf("Open asking for 3 replicas left %d", r)
		}
	})
}
