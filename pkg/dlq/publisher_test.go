package dlq_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

func dlqConfig(tg streamstest.Target) dlq.Config {
	return dlq.Config{Stream: tg.Cfg.DLQStream, Prefix: tg.Cfg.DLQPrefix, Consumer: tg.Cfg.ReplayerConsumer}
}

func msgCount(ctx context.Context, t *testing.T, js jetstream.JetStream, stream string) uint64 {
	t.Helper()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func TestPublishDeduplicatesPerFailure(t *testing.T) {
	for _, tg := range streamstest.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			p := dlq.NewPublisher(tg.JS, dlqConfig(tg))

			first, err := p.Publish(ctx, sampleEntry())
			if err != nil {
				t.Fatal(err)
			}
			// A crash between publish and ack: the same failure is published again.
			again, err := p.Publish(ctx, sampleEntry())
			if err != nil {
				t.Fatal(err)
			}
			if first.Duplicate || !again.Duplicate || again.Sequence != first.Sequence {
				t.Fatalf("acks %+v then %+v, want the second a duplicate of the first", first, again)
			}
			if n := msgCount(ctx, t, tg.JS, tg.Cfg.DLQStream); n != 1 {
				t.Fatalf("%d entries after a duplicate publish, want 1", n)
			}
			// The failure after a replay is a new entry.
			e := sampleEntry()
			e.ReplayCount = 1
			third, err := p.Publish(ctx, e)
			if err != nil || third.Duplicate {
				t.Fatalf("publish after replay: %+v, %v", third, err)
			}
			if n := msgCount(ctx, t, tg.JS, tg.Cfg.DLQStream); n != 2 {
				t.Fatalf("%d entries, want 2", n)
			}
		})
	}
}

func TestPublishNormalisesBadInput(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := dlq.NewPublisher(tg.JS, dlqConfig(tg))

	e := &dlq.Entry{
		InvocationID: "not.valid", Agent: "a*b", Class: "BAD_INPUT",
		Reason:    "decode failed at http://10.0.0.7:8080/x\nsecond line",
		SourceSeq: 42, DeliveryCount: 1, Worker: "w-1",
	}
	e.SetRequest([]byte("\x00garbage{"))
	ack, err := p.Publish(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	if e.InvocationID != "seq-42" || e.Agent != dlq.UnknownAgent || e.FailedAt.IsZero() || !e.FirstFailedAt.Equal(e.FailedAt) {
		t.Fatalf("not normalised: %+v", e)
	}
	if strings.Contains(e.Reason, "10.0.0.7") || strings.Contains(e.Reason, "second line") {
		t.Fatalf("reason not sanitised: %q", e.Reason)
	}
	it, err := dlq.NewReader(tg.JS, dlqConfig(tg)).Get(ctx, ack.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	if it.Subject != "agent.dlq.BAD_INPUT.unknown" {
		t.Errorf("subject %q", it.Subject)
	}
	for h, want := range map[string]string{
		dlq.HeaderMsgID: "dlq-seq:42-0", dlq.HeaderClass: "BAD_INPUT", dlq.HeaderAgent: "unknown",
		dlq.HeaderInvocationID: "seq-42", dlq.HeaderReplayCount: "0", dlq.HeaderEntryVersion: "1",
	} {
		if got := it.Header.Get(h); got != want {
			t.Errorf("header %s = %q, want %q", h, got, want)
		}
	}
	if string(it.Entry.OriginalRequest()) != "\x00garbage{" || it.Entry.Reason != e.Reason {
		t.Errorf("stored entry %+v", it.Entry)
	}

	// No invocation id and nothing to derive one from; no class.
	for name, bad := range map[string]*dlq.Entry{
		"no id":     {Class: "BAD_INPUT"},
		"no class":  {InvocationID: "inv-2", Agent: "support"},
		"bad class": {InvocationID: "inv-2", Agent: "support", Class: "SER.VER"},
	} {
		if _, err := p.Publish(ctx, bad); !errors.Is(err, dlq.ErrInvalidEntry) {
			t.Errorf("%s: Publish = %v, want ErrInvalidEntry", name, err)
		}
	}
}

func TestPublishCutsRequestToMaxPayload(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := dlq.NewPublisher(tg.JS, dlqConfig(tg))
	e := sampleEntry()
	big := []byte(strings.Repeat("\xff", int(tg.NC.MaxPayload())-100))
	e.SetRequest(big)
	ack, err := p.Publish(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	it, err := dlq.NewReader(tg.JS, dlqConfig(tg)).Get(ctx, ack.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	got := it.Entry
	if !got.RequestTruncated || got.RequestSize != len(big) || len(got.RequestSHA256) != 64 ||
		len(got.RequestRaw) == 0 || len(got.RequestRaw) >= len(big) || string(got.RequestRaw) != string(big[:len(got.RequestRaw)]) {
		t.Fatalf("truncated=%v size=%d sha=%q raw=%d", got.RequestTruncated, got.RequestSize, got.RequestSHA256, len(got.RequestRaw))
	}
}
