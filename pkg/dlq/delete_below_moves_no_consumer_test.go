package dlq_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// machineNATSURL is the NATS server of the machine (a 2.9.10 one, older
// than the minimum for batched deletes), used when NATS_URL is not set.
const machineNATSURL = "nats://127.0.0.1:4222"

// withMachineServer is streamstest.Targets plus the machine's NATS server
// when NATS_URL is not set and that server answers.
func withMachineServer(t *testing.T) []streamstest.Target {
	t.Helper()
	if os.Getenv("NATS_URL") == "" {
		nc, err := nats.Connect(machineNATSURL, nats.Timeout(2*time.Second))
		if err != nil {
			return streamstest.Targets(t)
		}
		nc.Close()
		t.Setenv("NATS_URL", machineNATSURL)
	}
	return streamstest.Targets(t)
}

// Regression (found in review, twenty-fourth session): DeleteBelow moved
// the other readers of the DLQ past entries they never received.
//
// DeleteBelow removed a run of one subject's entries with a filtered purge.
// On NATS before 2.9.12 (the machine's 2.9.10) that purge moves every
// consumer whose filter overlaps the subject (another replayer's walk of
// the whole DLQ, the durable dlq-replayer consumer) to the subject's next
// message: the other subjects' entries below it were never delivered to
// them, and a replayer's plan built on such a walk then removed them
// unreplayed. On such a server DeleteBelow now deletes entry by entry.
//
// Correct: after DeleteBelow a consumer of the whole DLQ created before it
// still delivers every entry left in the DLQ, and so does the durable one.
func TestDeleteBelowMovesNoOtherConsumer(t *testing.T) {
	for _, tg := range withMachineServer(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cfg := dlqConfig(tg)
			p := dlq.NewPublisher(tg.JS, cfg)
			seqs := map[string]uint64{}
			for i := range 40 {
				agent := []string{"alpha", "beta"}[i%2]
				e := sampleEntry()
				e.InvocationID, e.Class, e.Agent = fmt.Sprintf("%s-%d", agent, i), "SERVER", agent
				ack, err := p.Publish(ctx, e)
				if err != nil {
					t.Fatal(err)
				}
				seqs[e.InvocationID] = ack.Sequence
			}
			// A walk of the whole DLQ that has not received anything yet.
			walk, err := tg.JS.CreateConsumer(ctx, tg.Cfg.DLQStream, jetstream.ConsumerConfig{
				AckPolicy: jetstream.AckNonePolicy, FilterSubject: tg.Cfg.DLQPrefix + ".>",
				InactiveThreshold: time.Minute,
			})
			if err != nil {
				t.Fatal(err)
			}
			durable, err := tg.JS.Consumer(ctx, tg.Cfg.DLQStream, tg.Cfg.ReplayerConsumer)
			if err != nil {
				t.Fatal(err)
			}
			r := dlq.NewReader(tg.JS, cfg)
			if err := r.DeleteBelow(ctx, tg.Cfg.DLQSubject("SERVER", "alpha"), seqs["alpha-30"]); err != nil {
				t.Fatal(err)
			}
			var want []string // every beta entry, the alpha ones from alpha-30 on
			for i := range 40 {
				if i%2 == 1 || i >= 30 {
					want = append(want, fmt.Sprintf("%s-%d", []string{"alpha", "beta"}[i%2], i))
				}
			}
			left := list(ctx, t, r, dlq.Filter{}).ids
			if !slices.Equal(left, want) {
				t.Fatalf("DeleteBelow left %v, want %v", left, want)
			}
			for name, c := range map[string]jetstream.Consumer{"a walk of the whole DLQ": walk, "the durable dlq-replayer consumer": durable} {
				// Fetch returns as soon as every entry left arrived; it waits
				// out its wait only when some never come.
				batch, err := c.Fetch(len(left), jetstream.FetchMaxWait(5*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for m := range batch.Messages() {
					e, err := dlq.DecodeEntry(m.Data())
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, e.InvocationID)
				}
				if !slices.Equal(got, left) {
					t.Errorf("server %s: after DeleteBelow %s delivered %d entries %v, want the %d left in the DLQ %v: the purge moved it past entries of another subject",
						tg.NC.ConnectedServerVersion(), name, len(got), got, len(left), left)
				}
			}
		})
	}
}
