package replayer

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// benchEntries is how many entries one benchmark iteration replays.
const benchEntries = 5000

// BenchmarkReplayVsBarePublish replays benchEntries DLQ entries unthrottled
// (walk, republish awaiting each PubAck, delete each entry) and, in the same
// run and with the same concurrency, publishes the same request messages
// bare (PubAck awaited, nothing read or deleted). It reports both rates and
// their ratio.
func BenchmarkReplayVsBarePublish(b *testing.B) {
	x := newFx(b, false)
	ctx := context.Background()
	f, err := OpenFleet(ctx, x.cfg, false, nopLog())
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	const conc = 16
	var replayTime, bareTime time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		entries := x.seedFast(b, fmt.Sprintf("b%d", i), benchEntries)
		b.StartTimer()

		start := time.Now()
		plan, err := Plan(ctx, f, Selection{MaxReplays: 3})
		if err != nil {
			b.Fatal(err)
		}
		sum := NewSummary()
		if err := Execute(ctx, f, plan, ExecOptions{Concurrency: conc, Summary: sum}); err != nil {
			b.Fatal(err)
		}
		replayTime += time.Since(start)
		if got := sum.Total().Replayed; got != benchEntries {
			b.Fatalf("replayed %d of %d", got, benchEntries)
		}

		msgs := make([]*nats.Msg, len(entries))
		for k, e := range entries {
			m := ReplayMsg(f.Streams, e)
			m.Header.Set(nats.MsgIdHdr, "bare-"+m.Header.Get(nats.MsgIdHdr))
			msgs[k] = m
		}
		start = time.Now()
		work := make(chan *nats.Msg)
		var wg sync.WaitGroup
		for range conc {
			wg.Go(func() {
				for m := range work {
					if _, err := x.js.PublishMsg(ctx, m, jetstream.WithExpectStream(f.Streams.RequestsStream)); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for _, m := range msgs {
			work <- m
		}
		close(work)
		wg.Wait()
		bareTime += time.Since(start)
	}
	n := float64(b.N * benchEntries)
	replayRate, bareRate := n/replayTime.Seconds(), n/bareTime.Seconds()
	b.ReportMetric(replayRate, "replayed/s")
	b.ReportMetric(bareRate, "bare/s")
	b.ReportMetric(replayRate/bareRate, "ratio")
}

// seedFast stores n entries with async publishes (setup only).
func (x *fx) seedFast(b *testing.B, prefix string, n int) []*dlq.Entry {
	return x.seedFastT(b, prefix, n)
}

func (x *fx) seedFastT(b testing.TB, prefix string, n int) []*dlq.Entry {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := make([]*dlq.Entry, 0, n)
	var futures []jetstream.PubAckFuture
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		data, _ := request(id, "A-1042").Encode()
		e := &dlq.Entry{V: dlq.Version, InvocationID: id, Agent: "support", Class: "SERVER", Reason: "503", Retryable: true,
			DeliveryCount: 1, FirstFailedAt: time.Now().UTC(), FailedAt: time.Now().UTC(), Worker: "w", Model: "sim:support"}
		e.SetRequest(data)
		body, _ := e.Encode()
		m := &nats.Msg{Subject: x.sc.DLQSubject("SERVER", "support"), Data: body, Header: nats.Header{}}
		m.Header.Set(dlq.HeaderInvocationID, id)
		fut, err := x.js.PublishMsgAsync(m, jetstream.WithMsgID(dlq.MsgID(id, 0)))
		if err != nil {
			b.Fatal(err)
		}
		futures = append(futures, fut)
		out = append(out, e)
	}
	select {
	case <-x.js.PublishAsyncComplete():
	case <-ctx.Done():
		b.Fatal("seeding timed out")
	}
	for _, f := range futures {
		select {
		case err := <-f.Err():
			b.Fatal(err)
		default:
		}
	}
	return out
}
