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

func TestOpenModes(t *testing.T) {
	const day = 24 * time.Hour
	cases := []struct {
		name     string
		existing time.Duration // the bucket's max age before Open; -1: no bucket
		want     time.Duration // asked of Open
		mode     kvbucket.Mode
		after    time.Duration // the bucket's max age after Open (and Open's answer)
	}{
		{"configure creates", -1, 15 * day, kvbucket.Configure, 15 * day},
		{"configure lowers", 31 * day, 15 * day, kvbucket.Configure, 15 * day},
		{"keep-longer creates", -1, 15 * day, kvbucket.KeepLonger, 15 * day},
		{"keep-longer raises", 15 * day, 31 * day, kvbucket.KeepLonger, 31 * day},
		{"keep-longer does not lower", 31 * day, 15 * day, kvbucket.KeepLonger, 31 * day},
		{"keep-longer keeps forever", 0, 15 * day, kvbucket.KeepLonger, 0},
		{"keep-longer raises to forever", 15 * day, 0, kvbucket.KeepLonger, 0},
		{"existing leaves a longer one", 31 * day, 15 * day, kvbucket.Existing, 31 * day},
		{"existing leaves a shorter one", 2 * day, 15 * day, kvbucket.Existing, 2 * day},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			js, _, _ := natstest.JetStream(t)
			ctx := context.Background()
			if tc.existing >= 0 {
				if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "B", TTL: tc.existing}); err != nil {
					t.Fatal(err)
				}
			}
			kv, got, err := kvbucket.Open(ctx, js, jetstream.KeyValueConfig{Bucket: "B", History: 1, TTL: tc.want}, tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			if kv.Bucket() != "B" {
				t.Fatalf("bucket %q", kv.Bucket())
			}
			if got != tc.after {
				t.Errorf("Open says max age %v, want %v", got, tc.after)
			}
			if on := natstest.BucketMaxAge(t, js, "B"); on != tc.after {
				t.Errorf("server has max age %v, want %v", on, tc.after)
			}
		})
	}
}

func TestOpenExistingCreatesNothing(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	ctx := context.Background()
	_, _, err := kvbucket.Open(ctx, js, jetstream.KeyValueConfig{Bucket: "MISSING", TTL: time.Hour}, kvbucket.Existing)
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("err = %v, want ErrBucketNotFound", err)
	}
	if _, err := js.KeyValue(ctx, "MISSING"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("the bucket was created: %v", err)
	}
}

func TestOpenExistingKeepsOtherSettings(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	ctx := context.Background()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "B", History: 5, Description: "the owner's"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := kvbucket.Open(ctx, js, jetstream.KeyValueConfig{Bucket: "B", History: 1, Description: "mine"}, kvbucket.Existing); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "KV_B")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.MaxMsgsPerSubject != 5 || info.Config.Description != "the owner's" {
		t.Fatalf("bucket changed: history %d, description %q", info.Config.MaxMsgsPerSubject, info.Config.Description)
	}
}

func TestOpenUnknownMode(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	if _, _, err := kvbucket.Open(context.Background(), js, jetstream.KeyValueConfig{Bucket: "B"}, kvbucket.Mode(9)); err == nil {
		t.Fatal("an unknown mode opened a bucket")
	}
	if got := kvbucket.Mode(9).String(); got != "Mode(9)" {
		t.Fatalf("String = %q", got)
	}
}
