package client_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// staleJS is a JetStream whose results stream answers a look-up by subject
// with stale while stale is set, and with no message while none is set:
// what a replica or a mirror behind the stream's leader answers a direct
// get with. Everything else, the stream's info among it, is the server's.
type staleJS struct {
	jetstream.JetStream
	results string
	stale   atomic.Pointer[jetstream.RawStreamMsg]
	none    atomic.Bool
	served  atomic.Int32 // stale answers given
	lookups atomic.Int32 // look-ups by subject made
}

func (j *staleJS) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	s, err := j.JetStream.Stream(ctx, name)
	if err != nil || name != j.results {
		return s, err
	}
	return &staleStream{Stream: s, js: j}, nil
}

type staleStream struct {
	jetstream.Stream
	js *staleJS
}

func (s *staleStream) GetLastMsgForSubject(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	s.js.lookups.Add(1)
	if s.js.none.Load() {
		s.js.served.Add(1)
		return nil, jetstream.ErrMsgNotFound
	}
	if m := s.js.stale.Load(); m != nil && m.Subject == subject {
		s.js.served.Add(1)
		return m, nil
	}
	return s.Stream.GetLastMsgForSubject(ctx, subject)
}

// Regression (found in review of this session's fix, twenty-fifth
// session): the results stream allows direct gets, so a replica or a
// mirror behind its leader can answer a look-up with an older result of
// the invocation, at a lower sequence. AwaitAfter and AwaitSent took any
// stored result at a lower sequence than afterSeq for the newer one (a
// results stream recreated since): AwaitSent returned the invocation's
// first BAD_INPUT refusal as the result of the resend that followed the
// second, and AwaitAfter returned that refusal for the replay's result. A
// lower sequence counts now only when the stream's leader reports a last
// sequence below afterSeq.
func TestAwaitAfterIgnoresAnOlderResultALaggingReplicaAnswers(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	publish := func(inv string, st envelope.Status, class string) {
		t.Helper()
		publishResult(ctx, t, tg, &envelope.Result{InvocationID: inv, Status: st, ErrorClass: class})
	}
	results, err := tg.JS.Stream(ctx, tg.Cfg.ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		earlier envelope.Status // the result awaited after, stored after the first refusal
		await   func(c *client.Client, ctx context.Context, id string, before *client.StoredResult) (*envelope.Result, error)
	}{
		{"AwaitSent", envelope.StatusFailed, func(c *client.Client, ctx context.Context, id string, before *client.StoredResult) (*envelope.Result, error) {
			return c.AwaitSent(ctx, &client.Receipt{InvocationID: id, Stream: tg.Cfg.RequestsStream, Sequence: 1}, before)
		}},
		{"AwaitAfter", envelope.StatusDeadLettered, func(c *client.Client, ctx context.Context, id string, before *client.StoredResult) (*envelope.Result, error) {
			return c.AwaitAfter(ctx, id, before.Seq)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "regression8-stale-lower-" + tc.name
			subject := envelope.ResultSubject(tg.Cfg.ResultPrefix, id)
			publish(id, envelope.StatusFailed, badInput) // the first refusal
			first, err := results.GetLastMsgForSubject(ctx, subject)
			if err != nil {
				t.Fatal(err)
			}
			publish(id+"-other", envelope.StatusCompleted, "")
			class := ""
			if tc.earlier == envelope.StatusFailed {
				class = badInput
			}
			publish(id, tc.earlier, class) // the result awaited after
			js := &staleJS{JetStream: tg.JS, results: tg.Cfg.ResultsStream}
			c := newClientOn(t, tg, js, tg.NC)
			before, err := c.Lookup(ctx, id)
			if err != nil || before.Status != tc.earlier || before.Seq <= first.Sequence {
				t.Fatalf("premise: Lookup = %+v, %v; want %s after sequence %d", before, err, tc.earlier, first.Sequence)
			}

			js.stale.Store(first) // a lagging replica answers from now on
			done, early, ok := startAwait(ctx, t, c, 15*time.Second, func(actx context.Context) (*envelope.Result, error) {
				return tc.await(c, actx, id, before)
			})
			if !ok {
				t.Fatalf("%s after the result at %d, its look-up answered with the older refusal at %d by a lagging replica = %+v, %v; "+
					"want it to wait for a newer result", tc.name, before.Seq, first.Sequence, early.res, early.err)
			}
			// It looks again while it waits: the stale answer again.
			for js.served.Load() < 2 {
				select {
				case a := <-done:
					t.Fatalf("%s returned %+v, %v on a stale answer while waiting", tc.name, a.res, a.err)
				case <-time.After(10 * time.Millisecond):
				}
			}
			publish(id, envelope.StatusCompleted, "")
			js.stale.Store(nil) // caught up
			a := <-done
			if a.err != nil || a.res.Status != envelope.StatusCompleted {
				t.Fatalf("%s after the result at %d, with look-ups answered by a lagging replica with the refusal at %d "+
					"and then the completed result = %+v, %v; want the completed result", tc.name, before.Seq, first.Sequence, a.res, a.err)
			}
		})
	}
}

// Regression (found in review of this session's fix, twenty-fifth
// session): a look-up that finds no result makes a result at afterSeq
// count as newer (the earlier one is gone), but a replica behind the
// leader finds none for a result just stored. AwaitSent then must not
// take the refusal itself, found at its sequence with its own stored time
// by the next look-up, for the resend's result.
func TestAwaitSentIgnoresItsRefusalAfterALaggingReplicaFoundNone(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	publish := func(inv string, st envelope.Status, class string) {
		t.Helper()
		publishResult(ctx, t, tg, &envelope.Result{InvocationID: inv, Status: st, ErrorClass: class})
	}
	const id = "regression8-stale-none"
	publish(id, envelope.StatusFailed, badInput)
	js := &staleJS{JetStream: tg.JS, results: tg.Cfg.ResultsStream}
	c := newClientOn(t, tg, js, tg.NC)
	before, err := c.Lookup(ctx, id)
	if err != nil || !before.RefusedAsBadInput() {
		t.Fatalf("premise: Lookup = %+v, %v", before, err)
	}
	js.none.Store(true) // the lagging replica has not stored the refusal yet
	done, early, ok := startAwait(ctx, t, c, 15*time.Second, func(actx context.Context) (*envelope.Result, error) {
		return c.AwaitSent(actx, &client.Receipt{InvocationID: id, Stream: tg.Cfg.RequestsStream, Sequence: 1}, before)
	})
	if !ok { // the first look-up was answered: no result
		t.Fatalf("premise: AwaitSent returned %+v, %v before anything newer was stored", early.res, early.err)
	}
	if js.served.Load() == 0 {
		t.Fatal("premise: the lagging replica was not asked")
	}
	js.none.Store(false) // the leader answers from now on: the refusal itself, at before.Seq
	// Let it look again twice.
	for n := js.lookups.Load(); js.lookups.Load() < n+2; {
		select {
		case a := <-done:
			t.Fatalf("AwaitSent after a refusal at %d, a lagging replica having found no result and the leader then the refusal "+
				"itself = %+v, %v; want it to wait for the resend's result", before.Seq, a.res, a.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	select {
	case a := <-done:
		t.Fatalf("AwaitSent after a refusal at %d, a lagging replica having found no result and the leader then the refusal "+
			"itself = %+v, %v; want it to wait for the resend's result", before.Seq, a.res, a.err)
	default:
	}
	publish(id, envelope.StatusCompleted, "")
	if a := <-done; a.err != nil || a.res.Status != envelope.StatusCompleted {
		t.Fatalf("AwaitSent after a refusal at %d, then the completed result = %+v, %v; want the completed result",
			before.Seq, a.res, a.err)
	}
}
