package dlq_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

type fixture struct {
	seqs map[string]uint64 // invocation id (or "bad-…") -> sequence
	mid  time.Time         // between the first three entries and the rest
}

// fill publishes five good entries and two bad ones.
func fill(ctx context.Context, t *testing.T, tg streamstest.Target) fixture {
	t.Helper()
	p := dlq.NewPublisher(tg.JS, dlqConfig(tg))
	fx := fixture{seqs: map[string]uint64{}}
	pub := func(id, class, agent string) {
		e := sampleEntry()
		e.InvocationID, e.Class, e.Agent = id, class, agent
		ack, err := p.Publish(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		fx.seqs[id] = ack.Sequence
	}
	raw := func(name, class string, data []byte) {
		ack, err := tg.JS.Publish(ctx, tg.Cfg.DLQSubject(class, "support"), data)
		if err != nil {
			t.Fatal(err)
		}
		fx.seqs[name] = ack.Sequence
	}
	pub("a1", "SERVER", "support")
	pub("a2", "AUTH", "support")
	raw("bad-notjson", "SERVER", []byte("this is not json"))
	// The server stores with this machine's clock: every entry above was
	// acknowledged (stored) before mid, every entry below is stored after.
	fx.mid = time.Now()
	pub("a3", "SERVER", "billing")
	good, _ := sampleEntry().Encode()
	raw("bad-truncated", "SERVER", good[:len(good)/2])
	pub("a4", "BAD_INPUT", "unknown")
	pub("a5", "SERVER", "support")
	return fx
}

type listed struct {
	ids  []string // invocation ids of good entries, in order
	bad  []uint64 // sequences of bad entries
	errs []error
}

func list(ctx context.Context, t *testing.T, r *dlq.Reader, f dlq.Filter) listed {
	t.Helper()
	var out listed
	for it, err := range r.List(ctx, f) {
		switch {
		case it == nil:
			t.Fatalf("fatal list error: %v", err)
		case err != nil:
			var de *dlq.DecodeError
			if !errors.As(err, &de) || de.Seq != it.Seq || it.Entry != nil || it.Err != err {
				t.Fatalf("bad entry reported as %v (item %+v)", err, it)
			}
			out.bad = append(out.bad, it.Seq)
			out.errs = append(out.errs, err)
		default:
			out.ids = append(out.ids, it.Entry.InvocationID)
		}
	}
	return out
}

func TestListFilters(t *testing.T) {
	for _, tg := range streamstest.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			fx := fill(ctx, t, tg)
			r := dlq.NewReader(tg.JS, dlqConfig(tg))
			cases := []struct {
				name string
				f    dlq.Filter
				ids  []string
				bad  []string
			}{
				{"all", dlq.Filter{}, []string{"a1", "a2", "a3", "a4", "a5"}, []string{"bad-notjson", "bad-truncated"}},
				{"class", dlq.Filter{Class: "SERVER"}, []string{"a1", "a3", "a5"}, []string{"bad-notjson", "bad-truncated"}},
				{"agent", dlq.Filter{Agent: "billing"}, []string{"a3"}, nil},
				{"class+agent", dlq.Filter{Class: "SERVER", Agent: "support"}, []string{"a1", "a5"}, []string{"bad-notjson", "bad-truncated"}},
				{"unknown agent", dlq.Filter{Agent: dlq.UnknownAgent}, []string{"a4"}, nil},
				{"invocation", dlq.Filter{InvocationID: "a2"}, []string{"a2"}, nil},
				{"since", dlq.Filter{Since: fx.mid}, []string{"a3", "a4", "a5"}, []string{"bad-truncated"}},
				{"until", dlq.Filter{Until: fx.mid}, []string{"a1", "a2"}, []string{"bad-notjson"}},
				{"from seq", dlq.Filter{FromSeq: fx.seqs["a4"]}, []string{"a4", "a5"}, nil},
				{"no match", dlq.Filter{Class: "QUOTA_EXHAUSTED"}, nil, nil},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					got := list(ctx, t, r, c.f)
					var wantBad []uint64
					for _, b := range c.bad {
						wantBad = append(wantBad, fx.seqs[b])
					}
					if !slices.Equal(got.ids, c.ids) || !slices.Equal(got.bad, wantBad) {
						t.Fatalf("List(%+v) = %v bad %v, want %v bad %v", c.f, got.ids, got.bad, c.ids, wantBad)
					}
				})
			}
			// Listing consumed nothing: the replayer consumer still has everything.
			c, err := tg.JS.Consumer(ctx, tg.Cfg.DLQStream, tg.Cfg.ReplayerConsumer)
			if err != nil {
				t.Fatal(err)
			}
			info, err := c.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if info.NumPending != 7 || info.Delivered.Consumer != 0 {
				t.Fatalf("listing touched the consumer: pending %d delivered %d", info.NumPending, info.Delivered.Consumer)
			}
			// Stopping early is fine.
			for range r.List(ctx, dlq.Filter{}) {
				break
			}
			if _, err := func() (*dlq.Item, error) {
				for it, err := range r.List(ctx, dlq.Filter{Agent: "a.b"}) {
					return it, err
				}
				return nil, nil
			}(); !errors.Is(err, dlq.ErrInvalidFilter) {
				t.Fatalf("wildcard agent filter: %v", err)
			}
		})
	}
}

func TestListReportsMissingStream(t *testing.T) {
	tg := streamstest.Embedded(t)
	r := dlq.NewReader(tg.JS, dlq.Config{Stream: "NOPE"})
	n := 0
	for it, err := range r.List(context.Background(), dlq.Filter{}) {
		n++
		if it != nil || !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Fatalf("got %v, %v", it, err)
		}
	}
	if n != 1 {
		t.Fatalf("%d yields", n)
	}
}

func TestFetchAckDelete(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fx := fill(ctx, t, tg)
	r := dlq.NewReader(tg.JS, dlqConfig(tg))

	fctx, fcancel := context.WithTimeout(ctx, 2*time.Second)
	items, err := r.Fetch(fctx, 10)
	fcancel()
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 7 {
		t.Fatalf("fetched %d items, want 7", len(items))
	}
	var bad int
	for _, it := range items {
		if it.NumDelivered() != 1 {
			t.Errorf("seq %d delivered %d times", it.Seq, it.NumDelivered())
		}
		if it.Err != nil {
			bad++
		}
		if err := r.Ack(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	if bad != 2 {
		t.Fatalf("%d bad items fetched, want 2", bad)
	}
	if err := r.Ack(ctx, &dlq.Item{Seq: 1}); !errors.Is(err, dlq.ErrNotFetched) {
		t.Fatalf("Ack of a listed item: %v", err)
	}
	// Nothing left for the consumer.
	fctx, fcancel = context.WithTimeout(ctx, 1500*time.Millisecond)
	items, err = r.Fetch(fctx, 10)
	fcancel()
	if err != nil || len(items) != 0 {
		t.Fatalf("after acks: %d items, %v", len(items), err)
	}
	// Delete removes the entry from the stream: List no longer shows it.
	if err := r.Delete(ctx, fx.seqs["a2"]); err != nil {
		t.Fatal(err)
	}
	got := list(ctx, t, r, dlq.Filter{})
	if slices.Contains(got.ids, "a2") || len(got.ids) != 4 {
		t.Fatalf("after delete: %v", got.ids)
	}
	if _, err := r.Get(ctx, fx.seqs["a2"]); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("Get of a deleted entry: %v", err)
	}
	if err := r.Delete(ctx, fx.seqs["a2"]); err == nil {
		t.Fatal("second delete succeeded")
	}
}

// DeleteBelow removes the entries of one subject below a sequence and
// nothing else: not the entry at the sequence, not other subjects. It runs
// on the embedded server and, with NATS_URL, on the 2.9 server CI runs.
func TestDeleteBelow(t *testing.T) {
	for _, tg := range streamstest.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			fx := fill(ctx, t, tg)
			r := dlq.NewReader(tg.JS, dlqConfig(tg))
			if err := r.DeleteBelow(ctx, tg.Cfg.DLQPrefix+".SERVER.*", fx.seqs["a5"]); err == nil {
				t.Fatal("DeleteBelow accepted a wildcard subject")
			}
			// Nothing is below sequence 0 or 1: both leave the subject whole
			// (the server reads 0 as "all", and 2.9 reads 1 so too).
			all := list(ctx, t, r, dlq.Filter{})
			for _, seq := range []uint64{0, 1} {
				if err := r.DeleteBelow(ctx, tg.Cfg.DLQSubject("SERVER", "support"), seq); err != nil {
					t.Fatal(err)
				}
				if got := list(ctx, t, r, dlq.Filter{}); !slices.Equal(got.ids, all.ids) || len(got.bad) != len(all.bad) {
					t.Fatalf("DeleteBelow(%d) left %v (+%d bad), want all of %v (+%d bad)", seq, got.ids, len(got.bad), all.ids, len(all.bad))
				}
			}
			if err := r.DeleteBelow(ctx, tg.Cfg.DLQSubject("SERVER", "support"), fx.seqs["a5"]); err != nil {
				t.Fatal(err)
			}
			got := list(ctx, t, r, dlq.Filter{})
			if want := []string{"a2", "a3", "a4", "a5"}; !slices.Equal(got.ids, want) {
				t.Fatalf("left %v, want %v", got.ids, want)
			}
			if len(got.bad) != 0 {
				t.Fatalf("bad entries left %v, want none (both were on the subject, below a5)", got.bad)
			}
		})
	}
}
