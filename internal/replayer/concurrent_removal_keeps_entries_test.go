package replayer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// oldNATSURL is the machine's NATS 2.9 server (2.9.10), older than
// dlq's minimum for batched deletes.
const oldNATSURL = "nats://127.0.0.1:4222"

// oldNATS connects to the machine's NATS 2.9 server, or skips the test
// when it is not reachable or is not a 2.9 server.
func oldNATS(t *testing.T) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(oldNATSURL, nats.Timeout(2*time.Second), nats.Name(t.Name()))
	if err != nil {
		t.Skipf("NATS at %s not reachable: %v", oldNATSURL, err)
	}
	t.Cleanup(nc.Close)
	if v := nc.ConnectedServerVersion(); !strings.HasPrefix(v, "2.9.") {
		t.Skipf("NATS at %s is %s, not 2.9", oldNATSURL, v)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// firstDeliveryHookJS calls hook once, after the first message a pull
// iterator of a consumer created through it (the replay's walk) returns.
type firstDeliveryHookJS struct {
	jetstream.JetStream
	hook func()
}

func (h *firstDeliveryHookJS) CreateConsumer(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	c, err := h.JetStream.CreateConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, err
	}
	return &firstDeliveryHookConsumer{Consumer: c, hook: h.hook}, nil
}

type firstDeliveryHookConsumer struct {
	jetstream.Consumer
	hook func()
}

func (c *firstDeliveryHookConsumer) Messages(opts ...jetstream.PullMessagesOpt) (jetstream.MessagesContext, error) {
	m, err := c.Consumer.Messages(opts...)
	if err != nil {
		return nil, err
	}
	return &firstDeliveryHookMsgs{MessagesContext: m, hook: c.hook}, nil
}

type firstDeliveryHookMsgs struct {
	jetstream.MessagesContext
	once sync.Once
	hook func()
}

func (m *firstDeliveryHookMsgs) Next(opts ...jetstream.NextOpt) (jetstream.Msg, error) {
	msg, err := m.MessagesContext.Next(opts...)
	if err == nil {
		m.once.Do(m.hook)
	}
	return msg, err
}

// Regression (found in review, twenty-fourth session): two replayers at
// once deleted dead letters that were never replayed, on NATS 2.9.10.
//
// Two replayers at once are a supported deployment (the replayer's doc: "Two
// replayers running at once coordinate"; several drain processes, or a
// drain plus an on-call `replay`). Each removed the entries it replayed in
// batches, with a purge of one subject below a sequence (Reader.DeleteBelow).
// On NATS before 2.9.12 (nats-server PR #3838; the machine's 2.9.10), a
// filtered purge moves every consumer whose filter covers the purged subject
// (a walk without --class/--agent, or of the same class) to the purged
// subject's next message: the other replayer's walk consumer silently
// skipped the entries of the other subjects below that sequence (its
// delivery sequence stays contiguous, so the walk's gap check saw nothing;
// a consumer with a disjoint filter is not moved, and DeleteMsg moves
// none). The plan then linked the entries around the hole as neighbours,
// and the batched removal purged the subject below the last planned one:
// the skipped dead letters were deleted without ever being replayed. An
// on-call engineer saw "replayed N" and the work was gone. Now DeleteBelow
// deletes entry by entry on a server older than 2.9.18
// (dlq.Reader.BatchDeletes), and the remover does not batch there.
//
// Correct: every entry of the DLQ is replayed or left in the DLQ; none is
// removed unreplayed.
func TestConcurrentRemovalOnOldNATSKeepsUnreplayedEntries(t *testing.T) {
	nc, js := oldNATS(t)
	concurrentRemoval(t, nc, js, oldNATSURL)
}

// The same on the embedded (current) server, where a filtered purge moves
// only the consumers it covers: nothing is lost (a control: it passes).
func TestConcurrentRemovalOnCurrentNATSKeepsUnreplayedEntries(t *testing.T) {
	js, nc, srv := natstest.JetStream(t)
	concurrentRemoval(t, nc, js, srv.ClientURL())
}

// uniqueFx is an fx (no Redis) on the server of nc and js, which may be
// shared: its streams have names and prefixes of their own, deleted when
// the test ends.
func uniqueFx(t *testing.T, nc *nats.Conn, js jetstream.JetStream, url string) *fx {
	t.Helper()
	u := streamstest.UniqueConfig()
	cfg := config.DefaultReplayer()
	cfg.NATS.URL = url
	cfg.Streams.Requests, cfg.Streams.Results, cfg.Streams.DLQ = u.RequestsStream, u.ResultsStream, u.DLQStream
	cfg.Streams.RequestPrefix, cfg.Streams.ResultPrefix, cfg.Streams.DLQPrefix = u.RequestPrefix, u.ResultPrefix, u.DLQPrefix
	sc := StreamsConfig(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Cleanup(func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer dcancel()
		for _, s := range []string{sc.RequestsStream, sc.ResultsStream, sc.DLQStream} {
			if err := js.DeleteStream(dctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				t.Errorf("delete %s: %v", s, err)
			}
		}
	})
	if _, err := streams.Ensure(ctx, js, sc); err != nil {
		t.Fatal(err)
	}
	return &fx{t: t, nc: nc, js: js, sc: sc, url: url, cfg: cfg,
		pub: dlq.NewPublisher(js, dlq.Config{Stream: sc.DLQStream, Prefix: sc.DLQPrefix})}
}

func concurrentRemoval(t *testing.T, nc *nats.Conn, js jetstream.JetStream, url string) {
	x := uniqueFx(t, nc, js, url)
	cfg, sc := x.cfg, x.sc
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// 1,200 SERVER entries, alternating two agents (two DLQ subjects):
	// alpha at odd sequences, beta at even ones. More than the walk's
	// prefetch (walkBatch), so the walk is still being fed when the other
	// replayer removes its batch.
	const n = 1200
	var beta []string
	for i := range n {
		agent := "alpha"
		if i%2 == 1 {
			agent = "beta"
		}
		id := fmt.Sprintf("cr-%s-%d", agent, i)
		req := request(id, "A-1042")
		req.Agent = agent
		data, err := req.Encode()
		if err != nil {
			t.Fatal(err)
		}
		e := &dlq.Entry{InvocationID: id, Agent: agent, Class: "SERVER", Reason: "model 503 after retries",
			Retryable: true, DeliveryCount: 1, Worker: "w-test", Model: "sim:support"}
		e.SetRequest(data)
		if _, err := x.pub.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
		if agent == "beta" {
			beta = append(beta, id)
		}
	}

	// The other replayer (say `drain --agent alpha`) removes the alpha
	// entries it replayed with its batched removal while this replayer's
	// walk runs.
	other := dlq.NewReader(js, dlq.Config{Stream: sc.DLQStream, Prefix: sc.DLQPrefix, Consumer: sc.ReplayerConsumer})
	var hookErr error
	f, err := OpenFleet(ctx, cfg, false, nopLog())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.JS = &firstDeliveryHookJS{JetStream: f.JS, hook: func() {
		hookErr = other.DeleteBelow(ctx, sc.DLQSubject("SERVER", "alpha"), n-99)
	}}
	plan, err := Plan(ctx, f, Selection{MaxReplays: 3})
	if err != nil {
		t.Fatal(err)
	}
	if hookErr != nil {
		t.Fatalf("the other replayer's removal: %v", hookErr)
	}
	f.JS = f.JS.(*firstDeliveryHookJS).JetStream
	planned := 0
	for _, p := range plan {
		if p.Item.Entry != nil && p.Item.Entry.Agent == "beta" {
			planned++
		}
	}
	if err := Execute(ctx, f, plan, ExecOptions{Concurrency: 8}); err != nil {
		t.Fatal(err)
	}

	inDLQ := map[string]bool{}
	for _, id := range x.dlqIDs() {
		inDLQ[id] = true
	}
	replayed := x.requestMsgIDs()
	var lost []string
	for _, id := range beta {
		if !inDLQ[id] && replayed["replay:"+id+":1"] == 0 {
			lost = append(lost, id)
		}
	}
	if len(lost) > 0 {
		t.Fatalf("server %s: %d of %d beta dead letters were removed from the DLQ without being replayed "+
			"(the walk planned %d of them; first lost: %v): another replayer's filtered purge moved this walk's consumer past them, "+
			"and the batched removal then purged them as if replayed",
			nc.ConnectedServerVersion(), len(lost), len(beta), planned, lost[:min(5, len(lost))])
	}
}
