package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// env is one embedded JetStream server with the fleet's streams, shared
// in-memory stores, and the support agent's orders.
type env struct {
	t        *testing.T
	js       jetstream.JetStream
	nc       *nats.Conn
	sc       streams.Config
	sessions *session.Memory
	locker   *session.MemoryLocker
	invs     *session.MemoryInvocations
	orders   *support.MemoryOrders
	results  chan *envelope.Result
	seen     map[string]*envelope.Result
	// deps, if set, adjusts the Deps of every worker started from now on.
	deps func(*worker.Deps)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	js, nc, _ := natstest.JetStream(t)
	sc := streams.Config{WorkerAckWait: 3 * time.Second}.WithDefaults()
	ctx := context.Background()
	if _, err := streams.Ensure(ctx, js, sc); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, js: js, nc: nc, sc: sc, sessions: session.NewMemory(), locker: session.NewMemoryLocker(),
		invs: session.NewMemoryInvocations(time.Hour), orders: support.NewMemoryOrders(support.DemoOrders()...),
		results: make(chan *envelope.Result, 100), seen: map[string]*envelope.Result{}}
	sub, err := nc.Subscribe(sc.ResultSubject("*"), func(m *nats.Msg) {
		if r, err := envelope.DecodeResult(m.Data); err == nil {
			e.results <- r
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return e
}

// supportAgent returns the support agent on m with the given extra options.
func (e *env) supportAgent(m model.Model, tools ...tool.Tool) *agent.Agent {
	return &agent.Agent{
		Name: "support", Model: m, Instruction: support.Instruction, MaxModelCalls: 6,
		Tools: append([]tool.Tool{support.GetOrder(e.orders), support.RefundOrder(e.orders, nil)}, tools...),
	}
}

type running struct {
	w       *worker.Worker
	metrics *worker.Metrics
	cancel  context.CancelFunc
	done    chan struct{} // closed when Run returned
	err     error
}

func (e *env) startWorker(name string, ag *agent.Agent, cfg worker.Config) *running {
	e.t.Helper()
	cfg.Name = name
	if cfg.AckWait == 0 {
		cfg.AckWait = e.sc.WorkerAckWait
	}
	if cfg.FetchWait == 0 {
		cfg.FetchWait = 200 * time.Millisecond
	}
	if cfg.BusyDelay == 0 {
		cfg.BusyDelay = 100 * time.Millisecond
	}
	if cfg.InfraBackoffMax == 0 {
		cfg.InfraBackoffMax = 200 * time.Millisecond
	}
	m := worker.NewMetrics(nil)
	deps := worker.Deps{
		JS: e.js, Streams: e.sc,
		Agents:      map[string]*agent.Runner{ag.Name: {Agent: ag, Sessions: e.sessions}},
		Locker:      e.locker,
		Invocations: e.invs,
		DLQ:         dlq.NewPublisher(e.js, dlq.Config{Stream: e.sc.DLQStream, Prefix: e.sc.DLQPrefix}),
		Metrics:     m,
		Logger:      zerolog.New(zerolog.NewTestWriter(e.t)).Level(zerolog.DebugLevel),
	}
	if e.deps != nil {
		e.deps(&deps)
	}
	w, err := worker.New(context.Background(), cfg, deps)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{w: w, metrics: m, cancel: cancel, done: make(chan struct{})}
	go func() { r.err = w.Run(ctx); close(r.done) }()
	e.t.Cleanup(func() { r.shutdown(e.t) })
	return r
}

func (r *running) shutdown(t *testing.T) {
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Error("worker did not stop")
	}
}

func (r *running) count(agentName, action string) float64 {
	return testutil.ToFloat64(r.metrics.Messages.WithLabelValues(agentName, action))
}

func request(id, session, text string) *envelope.Request {
	return &envelope.Request{V: 1, InvocationID: id, Agent: "support", UserID: "u1", SessionID: session,
		Message: model.NewTextContent(model.RoleUser, text)}
}

func (e *env) publish(r *envelope.Request, hdr map[string]string) {
	e.t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		e.t.Fatal(err)
	}
	e.publishRaw(e.sc.RequestSubject(r.Agent), data, r.InvocationID, hdr)
}

func (e *env) publishRaw(subject string, data []byte, msgID string, hdr map[string]string) {
	e.t.Helper()
	m := nats.NewMsg(subject)
	m.Data = data
	if msgID != "" {
		m.Header.Set(envelope.HeaderMsgID, msgID)
	}
	for k, v := range hdr {
		m.Header.Set(k, v)
	}
	if _, err := e.js.PublishMsg(context.Background(), m); err != nil {
		e.t.Fatal(err)
	}
}

// await waits for the result of one invocation.
func (e *env) await(id string) *envelope.Result {
	e.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if r, ok := e.seen[id]; ok {
			delete(e.seen, id)
			return r
		}
		select {
		case r := <-e.results:
			e.seen[r.InvocationID] = r
		case <-deadline:
			e.t.Fatalf("no result for %s", id)
			return nil
		}
	}
}

// dlqEntries reads every DLQ entry without consuming.
func (e *env) dlqEntries() []*dlq.Entry {
	e.t.Helper()
	ctx := context.Background()
	s, err := e.js.Stream(ctx, e.sc.DLQStream)
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []*dlq.Entry
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		en, err := dlq.DecodeEntry(m.Data)
		if err != nil {
			e.t.Fatalf("bad DLQ entry at %d: %v", seq, err)
		}
		out = append(out, en)
	}
	return out
}

// pending returns the messages left in the requests stream (work queue:
// acked and terminated messages are removed).
func (e *env) pending() uint64 {
	e.t.Helper()
	s, err := e.js.Stream(context.Background(), e.sc.RequestsStream)
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return info.State.Msgs
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
