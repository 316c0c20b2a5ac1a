package chaos

import (
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// proofCheck is the checker's world without workers: an embedded NATS
// server with the fleet's streams and the harness's own redis-server on a
// free port (the checker reads fixed keys, demo:refunds and af:…, so it
// gets a Redis of its own instead of a prefix on the shared one).
type proofCheck struct {
	h  *Harness
	cl *client.Client
}

func newProofCheck(t *testing.T) *proofCheck {
	t.Helper()
	if _, _, err := ServerBinaries(Config{}); err != nil {
		t.Skipf("redis-server missing: %v", err)
	}
	ctx := context.Background()
	js, nc, _ := natstest.JetStream(t)
	if _, err := streams.Ensure(ctx, js, streams.Config{}); err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{WorkDir: t.TempDir(), Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	if h.redisPort, err = freePort(); err != nil {
		t.Fatal(err)
	}
	if err := h.startRedis(ctx); err != nil {
		t.Fatal(err)
	}
	h.rdb = redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(h.redisPort)})
	h.js = js
	cl, err := client.New(js, nc, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return &proofCheck{h: h, cl: cl}
}

// finish stores what a worker stores at the end of an invocation: the
// result on AGENT_RESULTS and the invocation record.
func (p *proofCheck) finish(t *testing.T, id string, st envelope.Status, class string) {
	t.Helper()
	ctx := context.Background()
	res := &envelope.Result{V: envelope.Version, InvocationID: id, Status: st, ErrorClass: class}
	b, err := res.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.h.js.Publish(ctx, envelope.ResultSubject(envelope.DefaultResultPrefix, id), b); err != nil {
		t.Fatal(err)
	}
	invs, err := redissession.NewInvocations(p.h.rdb, redissession.Config{Prefix: invocationPrefix})
	if err != nil {
		t.Fatal(err)
	}
	if err := invs.Transition(ctx, &session.Invocation{ID: id, Status: session.InvocationRunning}); err != nil {
		t.Fatal(err)
	}
	if err := invs.Transition(ctx, &session.Invocation{ID: id, Status: recordStatus(st), Result: b}); err != nil {
		t.Fatal(err)
	}
}

func (p *proofCheck) refund(t *testing.T, invocation, order string, cents int) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"invocation_id": invocation, "order_id": order, "amount_cents": cents})
	if err := p.h.rdb.RPush(context.Background(), refundsKey, b).Err(); err != nil {
		t.Fatal(err)
	}
}

func (p *proofCheck) check(t *testing.T, ids []string, replayed bool) *Report {
	t.Helper()
	tr := newTracker(ids)
	for _, id := range ids {
		tr.markSubmitted(id)
	}
	rep := &Report{}
	if replayed {
		rep.ReplayMode = "dlq-replayer replay"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.h.check(ctx, p.cl, tr, rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// The run's redis-server is new (its own directory), so every record in
// demo:refunds was written by this run's workers. Two refunds of one order
// by an invocation whose id did not reach the refund record (the tool's
// context lost it: the record says "") are a duplicated effect. The checker
// filed them under ForeignRefunds, which was not a violation, and never
// compared them; now both are violations.
func TestRefundsWithoutARunInvocationAreChecked(t *testing.T) {
	p := newProofCheck(t)
	id := "chaos-proof-0"
	p.finish(t, id, envelope.StatusCompleted, "")
	p.refund(t, "", "A-1001", 12999) // the same effect, twice
	p.refund(t, "", "A-1001", 12999)

	rep := p.check(t, []string{id}, true)
	t.Logf("refunds %d, foreign %d, duplicates %v, violations %v", rep.Refunds, rep.ForeignRefunds, rep.Duplicates, rep.Violations())
	if rep.OK() {
		t.Errorf("checker PASSES a fresh run whose demo:refunds holds the order A-1001 refunded twice (foreign refunds %d, duplicates %d)",
			rep.ForeignRefunds, rep.Duplicates.N)
	}
}

// "Transient" was decided by the DLQ entry's own retryable flag, which the
// worker under test writes; the replayer decides by class
// (replayer.AutoReplayable, the taxonomy table). A SERVER failure whose
// entry the worker mislabelled as not retryable, still dead-lettered after
// the replay, was not counted as transient, so "every transient entry
// completed after the replay" held vacuously. Now the class decides, and
// the mislabel is a violation of its own.
func TestTransientIsDecidedByTheClass(t *testing.T) {
	p := newProofCheck(t)
	ctx := context.Background()
	id := "chaos-proof-1"
	pub := dlq.NewPublisher(p.h.js, dlq.Config{})
	now := time.Now().UTC()
	e := &dlq.Entry{InvocationID: id, Agent: supportAgent, Class: "SERVER", Reason: "simulated 503",
		Retryable:     false, // the product's mistake
		DeliveryCount: 1, FirstFailedAt: now, FailedAt: now, Worker: "w1", Model: "sim"}
	req, _ := json.Marshal(newRequest(id, 1))
	e.SetRequest(req)
	if _, err := pub.Publish(ctx, e); err != nil {
		t.Fatal(err)
	}
	p.finish(t, id, envelope.StatusDeadLettered, "SERVER")

	rep := p.check(t, []string{id}, true)
	t.Logf("final %v, transient %d/%d, violations %v", rep.Final, rep.TransientCompleted, rep.Transient, rep.Violations())
	if rep.RetryableMismatch.N != 1 {
		t.Errorf("the SERVER entry marked not retryable is not reported as such: %v", rep.RetryableMismatch)
	}
	if rep.TransientNotCompleted.N == 0 {
		t.Errorf("a SERVER dead letter still dead-lettered after the replay is not reported (transient %d, final %v, violations %q)",
			rep.Transient, rep.Final, strings.Join(rep.Violations(), "; "))
	}
}
