package client_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// dupTargets are the embedded server and, with NATS_URL, that server,
// with a requests duplicate window of window (streamstest's targets have
// the 10-minute default, too long to wait out in a test).
func dupTargets(t *testing.T, window time.Duration) []streamstest.Target {
	t.Helper()
	ensure := func(js jetstream.JetStream, cfg streams.Config) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := streams.Ensure(ctx, js, cfg); err != nil {
			t.Fatalf("ensure: %v", err)
		}
	}
	js, nc, _ := natstest.JetStream(t)
	cfg := streams.Config{RequestDuplicates: window}.WithDefaults()
	ensure(js, cfg)
	out := []streamstest.Target{{Name: "embedded", JS: js, NC: nc, Cfg: cfg}}
	if url := os.Getenv("NATS_URL"); url != "" {
		enc, err := nats.Connect(url, nats.Name(t.Name()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(enc.Close)
		ejs, _ := jetstream.New(enc)
		ecfg := streamstest.UniqueConfig()
		ecfg.RequestDuplicates = window
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, s := range []string{ecfg.RequestsStream, ecfg.ResultsStream, ecfg.DLQStream} {
				if err := ejs.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
					t.Errorf("delete %s: %v", s, err)
				}
			}
		})
		ensure(ejs, ecfg)
		out = append(out, streamstest.Target{Name: "NATS_URL", JS: ejs, NC: enc, Cfg: ecfg})
	}
	return out
}

// dupTerm removes the request at seq from the requests stream, as the
// worker's Term/Ack does on the work queue.
func dupTerm(ctx context.Context, t *testing.T, tg streamstest.Target, seq uint64) {
	t.Helper()
	s, err := tg.JS.Stream(ctx, tg.Cfg.RequestsStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, seq); err != nil {
		t.Fatal(err)
	}
}

func dupSend(ctx context.Context, t *testing.T, c *client.Client, id string) *client.Receipt {
	t.Helper()
	r := request("again")
	r.InvocationID = id
	rec, err := c.Send(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// Regression (found in review, twenty-first session): a duplicate after a refusal
// is answered right at the window's edges and on a 2.9 server.
// A resend stored well after the refusal's duplicate window, then requeued by
// a worker (session busy: a copy under requeue:<id>:<seq>, the original
// acked), and a duplicate of it sent: AwaitSent's doc says such a duplicate
// is answered with the refusal only "when the refusal is younger than the
// window"; here it is older, so the duplicate must await the copy's result.
// On a server that does not fill StreamInfo.TimeStamp (nats-server 2.9, the
// "ts" field came in 2.10) the window rule never applies: GetMsg finds the
// original gone, Lookup finds only the refusal, and the stale refusal is
// returned at once while the requeued copy runs (the defect the commit set
// out to fix).
func TestDuplicateOfARequeuedResendAfterTheWindowAwaitsItsResult(t *testing.T) {
	const window = time.Second
	for _, tg := range dupTargets(t, window) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c := newClient(t, tg)
			id := "inv-dup-requeued-" + tg.Name
			// The refused request, its refusal, its removal (Term).
			r0 := dupSend(ctx, t, c, id)
			storeRefusal(ctx, t, tg, id)
			dupTerm(ctx, t, tg, r0.Sequence)
			before, err := c.Lookup(ctx, id)
			if err != nil || !before.RefusedAsBadInput() {
				t.Fatalf("Lookup = %+v, %v", before, err)
			}
			time.Sleep(window + client.DuplicateSlack + 500*time.Millisecond) // the refused request's window (and the slack) passes

			// The resend, stored; a worker requeues it (copy, then ack).
			r1 := dupSend(ctx, t, c, id)
			if r1.Duplicate {
				t.Fatalf("premise: resend after the window was a duplicate: %+v", r1)
			}
			raw, err := tg.JS.Stream(ctx, tg.Cfg.RequestsStream)
			if err != nil {
				t.Fatal(err)
			}
			m, err := raw.GetMsg(ctx, r1.Sequence)
			if err != nil {
				t.Fatal(err)
			}
			cp := nats.NewMsg(m.Subject)
			cp.Data = m.Data
			if _, err := tg.JS.PublishMsg(ctx, cp, jetstream.WithMsgID("requeue:"+id+":"+itoa(r1.Sequence))); err != nil {
				t.Fatal(err)
			}
			dupTerm(ctx, t, tg, r1.Sequence)

			// A duplicate of the resend.
			r2 := dupSend(ctx, t, c, id)
			if !r2.Duplicate || r2.Sequence != r1.Sequence {
				t.Fatalf("premise: %+v is not a duplicate of seq %d", r2, r1.Sequence)
			}
			info := raw.CachedInfo()
			if _, err := raw.Info(ctx); err == nil {
				info = raw.CachedInfo()
			}
			done := make(chan awaited, 1)
			go func() {
				actx, acancel := context.WithTimeout(ctx, 10*time.Second)
				defer acancel()
				res, err := c.AwaitSent(actx, r2, before)
				done <- awaited{res, err}
			}()
			select {
			case o := <-done:
				t.Fatalf("AwaitSent returned %+v, %v (the stale refusal: %v) before the requeued copy ran; the refusal is older than the %v window (server StreamInfo.TimeStamp = %v)",
					o.res, o.err, o.res == before.Result, window, info.TimeStamp)
			case <-time.After(500 * time.Millisecond):
			}
			// The copy runs and completes.
			b, _ := (&envelope.Result{InvocationID: id, Status: envelope.StatusCompleted, Content: "echo: again"}).Encode()
			if _, err := tg.JS.Publish(ctx, tg.Cfg.ResultSubject(id), b); err != nil {
				t.Fatal(err)
			}
			o := recv(ctx, t, done)
			if o.err != nil || o.res.Status != envelope.StatusCompleted {
				t.Fatalf("AwaitSent = %+v, %v; want the requeued copy's result", o.res, o.err)
			}
		})
	}
}

func itoa(n uint64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// Regression (found in review, twenty-first session): a duplicate after a refusal
// is answered right at the window's edges and on a 2.9 server.
// The server keeps a Nats-Msg-Id in its duplicate map past the window: its
// purge timer fires at least 50 ms apart (nats-server stream.go
// purgeMsgIds, minFire), so an id stored less than 50 ms after the one
// purged before it lives up to ~50 ms beyond the window. A resend of the
// refused request in that gap is still dropped as a duplicate of the refused
// request itself, but AwaitSent's first rule (refusal older than TimeStamp -
// window) takes it for a duplicate of a later resend and awaits a result
// that never comes: the caller waits out its whole timeout (a batch line's
// 2 minutes) instead of getting the refusal at once, as before the change.
func TestDuplicateOfTheRefusedRequestJustPastTheWindowGetsTheRefusal(t *testing.T) {
	const window = time.Second
	tg := dupTargets(t, window)[0] // embedded: fills TimeStamp
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := newClient(t, tg)
	for try := range 8 {
		id := "inv-dup-edge-" + itoa(uint64(try))
		r := request("again")
		r.InvocationID = id
		// Another producer's request, stored just before the refused one:
		// the purge timer is armed for it (the first id in the map).
		if _, err := tg.JS.Publish(ctx, tg.Cfg.RequestSubject("support"), []byte("{}"), jetstream.WithMsgID("other-"+id)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // the refused request comes a moment later
		r0, err := c.Send(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		storeRefusal(ctx, t, tg, id) // the worker's refusal, a millisecond later
		before, err := c.Lookup(ctx, id)
		if err != nil || !before.RefusedAsBadInput() {
			t.Fatalf("Lookup = %+v, %v", before, err)
		}
		dupTerm(ctx, t, tg, r0.Sequence)
		// Just past the refusal's time plus the window.
		time.Sleep(time.Until(before.Time.Add(window + 5*time.Millisecond)))
		r1 := dupSend(ctx, t, c, id)
		if !r1.Duplicate || r1.Sequence != r0.Sequence {
			t.Logf("try %d: premise: the resend was not a duplicate of the refused request (seq %d) this time", try, r0.Sequence)
			time.Sleep(window + 100*time.Millisecond) // let the map empty: the next try arms a fresh timer
			continue
		}
		actx, acancel := context.WithTimeout(ctx, 3*time.Second)
		defer acancel()
		start := time.Now()
		res, err := c.AwaitSent(actx, r1, before)
		if err != nil || res != before.Result {
			t.Fatalf("AwaitSent = %+v, %v after %v; the send was dropped as a duplicate of the refused request itself, whose answer is the refusal (want before.Result at once)",
				res, err, time.Since(start).Round(time.Millisecond))
		}
		return
	}
	t.Skip("premise never met")
}
