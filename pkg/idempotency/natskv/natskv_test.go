package natskv_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/idempotency/idempotencytest"
	"github.com/agentfleet/agentfleet/pkg/idempotency/natskv"
)

func newStore(t *testing.T, js jetstream.JetStream, cfg natskv.Config) *natskv.Store {
	t.Helper()
	s, err := natskv.New(context.Background(), js, cfg)
	if err != nil {
		t.Fatalf("natskv.New: %v", err)
	}
	return s
}

func connect(t *testing.T, url string, opts ...nats.Option) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name(t.Name())}, opts...)...)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func retentionOr(d time.Duration) time.Duration {
	if d == 0 {
		return time.Hour
	}
	return d
}

// unreachable creates a store on a live embedded server, then stops the
// server: every later call must fail closed.
func unreachable(t *testing.T) idempotency.Store {
	srv := natstest.RunServer(t)
	js := connect(t, srv.ClientURL(), nats.MaxReconnects(-1))
	s := newStore(t, js, natskv.Config{Bucket: "IDEM", Retention: time.Hour, OpTimeout: time.Second})
	srv.Shutdown()
	srv.WaitForShutdown()
	return s
}

func TestNATSKVConformance(t *testing.T) {
	idempotencytest.Run(t, idempotencytest.Factory{
		New: func(t *testing.T, retention time.Duration) idempotencytest.Instance {
			srv := natstest.RunServer(t)
			cfg := natskv.Config{Bucket: "IDEM", Retention: retentionOr(retention)}
			return idempotencytest.Instance{
				Store: newStore(t, connect(t, srv.ClientURL()), cfg),
				Reopen: func(t *testing.T) idempotency.Store {
					return newStore(t, connect(t, srv.ClientURL()), cfg)
				},
			}
		},
		Unreachable: unreachable,
		// Bucket MaxAge is enforced by the server's expiry timer; one second
		// is short enough for a test and long enough to be reliable.
		MinRetention:  time.Second,
		ExpiryTimeout: 15 * time.Second,
	})
}

// TestNATSServer29 runs the suite against an external server, the NATS 2.9
// this project deploys on, when NATS_URL is set (e.g.
// NATS_URL=nats://127.0.0.1:4222). Each subtest uses its own bucket and
// deletes it.
func TestNATSServer29(t *testing.T) {
	url := os.Getenv("NATS_URL")
	if url == "" {
		t.Skip("NATS_URL not set")
	}
	idempotencytest.Run(t, idempotencytest.Factory{
		New: func(t *testing.T, retention time.Duration) idempotencytest.Instance {
			var b [6]byte
			_, _ = rand.Read(b[:])
			cfg := natskv.Config{Bucket: "IDEMTEST_" + hex.EncodeToString(b[:]), Retention: retentionOr(retention)}
			js := connect(t, url)
			t.Cleanup(func() { _ = js.DeleteKeyValue(context.Background(), cfg.Bucket) })
			return idempotencytest.Instance{
				Store:  newStore(t, js, cfg),
				Reopen: func(t *testing.T) idempotency.Store { return newStore(t, connect(t, url), cfg) },
			}
		},
		Unreachable:   unreachable,
		MinRetention:  time.Second,
		ExpiryTimeout: 15 * time.Second,
	})
}

func TestKVKey(t *testing.T) {
	cases := map[string]string{
		"idem:support:refund:0a1b": "idem.support.refund.0a1b",
		"idem:my.agent:a/b=c:ff":   "idem.my=2Eagent.a=2Fb=3Dc.ff",
		"idem:agent ü:t:1":         "idem.agent=20=C3=BC.t.1",
	}
	for in, want := range cases {
		if got := natskv.KVKey(in); got != want {
			t.Errorf("KVKey(%q) = %q, want %q", in, got, want)
		}
	}
	if got := natskv.IndexKey("inv:1.2"); got != "idem-invocation.inv=3A1=2E2" {
		t.Errorf("IndexKey = %q", got)
	}
	if natskv.KVKey("a.b:c") == natskv.KVKey("a:b:c") {
		t.Error("'.' inside a segment must not look like a separator")
	}
}

func TestNewOnStoppedServerIsStoreError(t *testing.T) {
	srv := natstest.RunServer(t)
	js := connect(t, srv.ClientURL())
	srv.Shutdown()
	srv.WaitForShutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := natskv.New(ctx, js, natskv.Config{Bucket: "IDEM", OpTimeout: time.Second})
	if err == nil || !isUnavailable(err) {
		t.Fatalf("New on a stopped server = %v, want ErrStoreUnavailable", err)
	}
}

func isUnavailable(err error) bool {
	var se *idempotency.StoreError
	return errors.As(err, &se) && se.Backend == "natskv" && errors.Is(err, idempotency.ErrStoreUnavailable)
}

// TestNewNeverLowersRetention: a process configured with a shorter retention
// (a replayer on its defaults, an older worker) must not cut the records of
// a bucket that keeps them longer, or a replay of an old dead letter would
// run its effects again; a longer one raises it.
func TestNewNeverLowersRetention(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	long := newStore(t, js, natskv.Config{Bucket: "IDEM", Retention: 31 * 24 * time.Hour})
	if got := long.Retention(); got != 31*24*time.Hour {
		t.Fatalf("Retention = %v", got)
	}
	short := newStore(t, js, natskv.Config{Bucket: "IDEM", Retention: 15 * 24 * time.Hour})
	if got := short.Retention(); got != 31*24*time.Hour {
		t.Fatalf("a shorter configuration reports %v, want the bucket's 744h", got)
	}
	if got := natstest.BucketMaxAge(t, js, "IDEM"); got != 31*24*time.Hour {
		t.Fatalf("bucket max age %v after a shorter New, want 744h", got)
	}
	newStore(t, js, natskv.Config{Bucket: "IDEM", Retention: 40 * 24 * time.Hour})
	if got := natstest.BucketMaxAge(t, js, "IDEM"); got != 40*24*time.Hour {
		t.Fatalf("bucket max age %v after a longer New, want 960h", got)
	}
}

// TestOpenExisting: OpenExisting neither creates nor changes the bucket and
// reports the bucket's retention; a missing bucket is a StoreError.
func TestOpenExisting(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	_, err := natskv.New(context.Background(), js, natskv.Config{Bucket: "IDEM", OpenExisting: true})
	var se *idempotency.StoreError
	if !errors.As(err, &se) || !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("missing bucket: err = %v, want a StoreError wrapping ErrBucketNotFound", err)
	}
	if _, err := js.KeyValue(context.Background(), "IDEM"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("OpenExisting created the bucket: %v", err)
	}
	newStore(t, js, natskv.Config{Bucket: "IDEM", Retention: 2 * time.Hour})
	s := newStore(t, js, natskv.Config{Bucket: "IDEM", Retention: time.Minute, OpenExisting: true})
	if got := s.Retention(); got != 2*time.Hour {
		t.Fatalf("Retention = %v, want the bucket's 2h", got)
	}
	if got := natstest.BucketMaxAge(t, js, "IDEM"); got != 2*time.Hour {
		t.Fatalf("bucket max age %v, want 2h unchanged", got)
	}
}
