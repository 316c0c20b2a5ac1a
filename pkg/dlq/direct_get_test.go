package dlq_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// The DLQ stream allows direct gets, and a process of an earlier version
// turns them off when it starts (streams.Ensure). A Reader that looked the
// stream up before that reads on (its direct get has no responder: it
// refreshes the stream info and reads with a stream message get), and one
// that looked it up before they were turned on again reads on too. However
// it was read, an Item's Header is the entry's as stored: the metadata a
// direct get adds (Nats-Stream, Nats-Sequence, ...) is not in it, so a
// parked copy does not carry it. Runs on $NATS_URL too (NATS 2.9).
func TestReaderReadsWhetherDirectGetsAreOnOrOff(t *testing.T) {
	for _, tg := range streamstest.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := tg.JS.Stream(ctx, tg.Cfg.DLQStream)
			if err != nil {
				t.Fatal(err)
			}
			if !s.CachedInfo().Config.AllowDirect {
				t.Fatal("the DLQ stream does not allow direct gets")
			}
			e := sampleEntry()
			e.InvocationID = "inv-direct"
			ack, err := dlq.NewPublisher(tg.JS, dlqConfig(tg)).Publish(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			setDirect := func(on bool) {
				t.Helper()
				sc := s.CachedInfo().Config
				sc.AllowDirect = on
				if _, err := tg.JS.UpdateStream(ctx, sc); err != nil {
					t.Fatalf("set AllowDirect %v: %v", on, err)
				}
			}
			// The replayer's reads mostly run without a deadline: on NATS
			// 2.9 a direct get to a stream whose direct gets were turned
			// off gets no answer, and times out after the client's default
			// timeout (5s) before the Reader reads again.
			rctx := context.Background()
			check := func(r *dlq.Reader, when string) {
				t.Helper()
				it, err := r.Get(rctx, ack.Sequence)
				if err != nil {
					t.Fatalf("%s: get: %v", when, err)
				}
				if it.Entry.InvocationID != "inv-direct" || it.Header.Get(dlq.HeaderInvocationID) != "inv-direct" {
					t.Fatalf("%s: read %q (header %q)", when, it.Entry.InvocationID, it.Header.Get(dlq.HeaderInvocationID))
				}
				for _, h := range []string{jetstream.StreamHeader, jetstream.SequenceHeader, jetstream.SubjectHeader, jetstream.TimeStampHeaer} {
					if v, ok := it.Header[h]; ok {
						t.Errorf("%s: the Item's Header holds the direct get's %s: %v", when, h, v)
					}
				}
				n := 0
				for it, err := range r.List(rctx, dlq.Filter{}) {
					if err != nil {
						t.Fatalf("%s: list: %v", when, err)
					}
					if it.Seq != ack.Sequence {
						t.Fatalf("%s: list yields seq %d, want %d", when, it.Seq, ack.Sequence)
					}
					n++
				}
				if n != 1 {
					t.Fatalf("%s: list yields %d entries, want 1", when, n)
				}
			}
			direct := dlq.NewReader(tg.JS, dlqConfig(tg))
			check(direct, "direct gets on")
			setDirect(false) // an earlier version's Ensure
			check(direct, "direct gets turned off after the look-up")
			check(dlq.NewReader(tg.JS, dlqConfig(tg)), "direct gets off")
			off := dlq.NewReader(tg.JS, dlqConfig(tg))
			check(off, "direct gets off")
			setDirect(true)
			check(off, "direct gets turned on after the look-up")
		})
	}
}

// Reader.Get confirms "not found" with the stream's leader (a direct get
// may be answered by a replica that lags): a deleted entry is not found,
// through both reads, and an entry that is there is read whole. Runs on
// $NATS_URL too (NATS 2.9).
func TestGetNotFoundIsTheLeaders(t *testing.T) {
	for _, tg := range streamstest.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			p := dlq.NewPublisher(tg.JS, dlqConfig(tg))
			r := dlq.NewReader(tg.JS, dlqConfig(tg))
			var seqs []uint64
			for _, id := range []string{"inv-gone", "inv-kept"} {
				e := sampleEntry()
				e.InvocationID = id
				ack, err := p.Publish(ctx, e)
				if err != nil {
					t.Fatal(err)
				}
				seqs = append(seqs, ack.Sequence)
			}
			if err := r.Delete(ctx, seqs[0]); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Get(ctx, seqs[0]); !errors.Is(err, jetstream.ErrMsgNotFound) {
				t.Fatalf("get of a deleted entry: %v, want ErrMsgNotFound", err)
			}
			if _, err := r.Get(ctx, seqs[1]+10); !errors.Is(err, jetstream.ErrMsgNotFound) {
				t.Fatalf("get past the last entry: %v, want ErrMsgNotFound", err)
			}
			it, err := r.Get(ctx, seqs[1])
			if err != nil || it.Entry.InvocationID != "inv-kept" {
				t.Fatalf("get of a stored entry: %v", err)
			}
			// What the leader answers for an entry a lagging replica did
			// not have is the entry as a direct get reads it.
			raw, err := r.LeaderGet(ctx, seqs[1])
			if err != nil {
				t.Fatal(err)
			}
			if raw.Sequence != it.Seq || raw.Subject != it.Subject || !raw.Time.Equal(it.Time) || !bytes.Equal(raw.Data, it.Data) ||
				raw.Header.Get(dlq.HeaderInvocationID) != "inv-kept" || len(raw.Header) != len(it.Header) {
				t.Fatalf("leader's read differs: seq %d subject %q time %v %d bytes header %v; direct: seq %d subject %q time %v %d bytes header %v",
					raw.Sequence, raw.Subject, raw.Time, len(raw.Data), raw.Header, it.Seq, it.Subject, it.Time, len(it.Data), it.Header)
			}
			if _, err := r.LeaderGet(ctx, seqs[0]); !errors.Is(err, jetstream.ErrMsgNotFound) {
				t.Fatalf("leader's read of a deleted entry: %v, want ErrMsgNotFound", err)
			}
		})
	}
}
