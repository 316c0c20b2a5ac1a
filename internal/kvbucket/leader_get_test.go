package kvbucket_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/kvbucket"
	"github.com/agentfleet/agentfleet/internal/natstest"
)

// LeaderGet answers as KeyValue.Get does: the latest value and revision of
// a key, and ErrKeyNotFound for a key never written or whose latest entry
// is a delete or purge marker.
func TestLeaderGetAnswersAsGet(t *testing.T) {
	s := natstest.RunServer(t)
	js, err := jetstream.New(natstest.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "LEADER_GET", History: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kvbucket.LeaderGet(ctx, js, "LEADER_GET", "never"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("a key never written: %v, want ErrKeyNotFound", err)
	}
	if _, err := kv.Put(ctx, "k.a", []byte("one")); err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Put(ctx, "k.a", []byte("two"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := kvbucket.LeaderGet(ctx, js, "LEADER_GET", "k.a")
	if err != nil {
		t.Fatal(err)
	}
	direct, err := kv.Get(ctx, "k.a")
	if err != nil {
		t.Fatal(err)
	}
	if string(e.Value()) != "two" || e.Revision() != rev || e.Key() != "k.a" || e.Bucket() != "LEADER_GET" ||
		!e.Created().Equal(direct.Created()) || e.Operation() != jetstream.KeyValuePut {
		t.Fatalf("leader read %q rev %d created %v; Get read %q rev %d created %v",
			e.Value(), e.Revision(), e.Created(), direct.Value(), direct.Revision(), direct.Created())
	}
	if err := kv.Delete(ctx, "k.a"); err != nil {
		t.Fatal(err)
	}
	if _, err := kvbucket.LeaderGet(ctx, js, "LEADER_GET", "k.a"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("a deleted key: %v, want ErrKeyNotFound", err)
	}
	if _, err := kv.Put(ctx, "k.b", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, "k.b"); err != nil {
		t.Fatal(err)
	}
	if _, err := kvbucket.LeaderGet(ctx, js, "LEADER_GET", "k.b"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("a purged key: %v, want ErrKeyNotFound", err)
	}
	if _, err := kvbucket.LeaderGet(ctx, js, "NO_SUCH_BUCKET", "k"); err == nil || errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("a missing bucket: %v, want an error other than ErrKeyNotFound", err)
	}
}

// LeaderConfirm reads again after each of ConfirmDelays while the answer
// is a refusal (three reads at most) and returns the last read.
func TestLeaderConfirmReadsAgainWhileRefused(t *testing.T) {
	s := natstest.RunServer(t)
	js, err := jetstream.New(natstest.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "LEADER_CONFIRM"})
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	e, err := kvbucket.LeaderConfirm(ctx, js, "LEADER_CONFIRM", "k", func(e jetstream.KeyValueEntry, err error) bool {
		asked++
		if asked == 2 {
			// The write lands between two reads: the next read sees it.
			if _, perr := kv.Put(ctx, "k", []byte("mine")); perr != nil {
				t.Fatal(perr)
			}
		}
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
	if err != nil || string(e.Value()) != "mine" {
		t.Fatalf("the last read: %v, want the entry written before it", err)
	}
	if asked != 2 {
		t.Fatalf("asked %d times, want 2 (absent twice; the third read, after the write, is returned)", asked)
	}
}
