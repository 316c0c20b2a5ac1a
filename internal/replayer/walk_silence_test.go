package replayer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// A server that stops serving the walk half way (here: every request the
// replayer sends after the first entries is dropped on the way, as a
// stalled server or link does) must not end the plan as if the DLQ held
// only what arrived: the on-call engineer would replay a part, be told it
// was all, and the rest would age out of the DLQ. The walk ends with
// ErrWalkInterrupted instead. It used to end silently after one 5 s wait.
func TestWalkThatTheServerStopsServingFails(t *testing.T) {
	x := newFx(t, false)
	const n = 700 // more than one prefetch (walkBatch): the walk must ask for more
	x.seedFastT(t, "stall", n)
	p := natstest.StartCutProxy(t, strings.TrimPrefix(x.url, "nats://"))
	x.cfg.NATS.URL = p.URL()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := x.walkFleet(ctx)

	got := 0
	var walkErr error
	for it, err := range f.walk(ctx, dlq.Filter{}, 0) {
		if it == nil {
			walkErr = err
			break
		}
		got++
		if got == 1 {
			p.SetSwallow(true) // from now on nothing the replayer sends reaches the server
		}
	}
	if got >= n {
		t.Fatalf("the walk got all %d entries: the test proves nothing", got)
	}
	if !errors.Is(walkErr, ErrWalkInterrupted) {
		t.Fatalf("the walk ended after %d of %d entries with error %v; want ErrWalkInterrupted", got, n, walkErr)
	}
}

// Entries removed while the walk runs (another replayer, or the stream's
// max age) are not an interruption: the walk ends without error once the
// consumer says nothing is left.
func TestWalkWhoseRestWasDeletedEnds(t *testing.T) {
	x := newFx(t, false)
	const n = 700
	x.seedFastT(t, "gone", n)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := x.walkFleet(ctx)
	got := 0
	for it, err := range f.walk(ctx, dlq.Filter{}, 0) {
		if it == nil {
			t.Fatalf("after %d entries: %v", got, err)
		}
		got++
		if got == 1 {
			// Remove everything the walk has not been sent yet: the
			// prefetch holds at most walkBatch, so delete from there on.
			st, err := x.js.Stream(ctx, x.sc.DLQStream)
			if err != nil {
				t.Fatal(err)
			}
			for seq := uint64(walkBatch + 1); seq <= n; seq++ {
				if err := st.DeleteMsg(ctx, seq); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if got == 0 || got > walkBatch {
		t.Fatalf("the walk yielded %d entries; want between 1 and %d", got, walkBatch)
	}
}

// walkFleet opens a fleet on x.cfg (closed when the test ends) whose walk
// waits 300 ms for its next entry instead of 5 s.
func (x *fx) walkFleet(ctx context.Context) *Fleet {
	x.t.Helper()
	f, err := OpenFleet(ctx, x.cfg, false, nopLog())
	if err != nil {
		x.t.Fatal(err)
	}
	x.t.Cleanup(f.Close)
	f.walkWait = 300 * time.Millisecond
	return f
}
