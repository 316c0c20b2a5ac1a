package replayer

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// fx is one embedded JetStream server with the fleet's streams and, when
// asked for, the fleet's stores on the local Redis under a prefix of the
// test's own.
type fx struct {
	t      testing.TB
	nc     *nats.Conn
	js     jetstream.JetStream
	sc     streams.Config
	url    string
	rdb    *redis.Client
	prefix string
	cfg    config.Replayer
	stores *app.Stores
	pub    *dlq.Publisher
}

func newFx(t testing.TB, withRedis bool) *fx {
	t.Helper()
	js, nc, srv := natstest.JetStream(t)
	return newFxOn(t, withRedis, js, nc, srv.ClientURL())
}

// newFxOn is newFx on a server of the test's own: js and nc are a
// connection with every permission, url is the one the CLI and workers use.
func newFxOn(t testing.TB, withRedis bool, js jetstream.JetStream, nc *nats.Conn, url string) *fx {
	t.Helper()
	cfg := config.DefaultReplayer()
	cfg.NATS.URL = url
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	x := &fx{t: t, nc: nc, js: js, url: url, cfg: cfg}
	if withRedis {
		x.rdb, x.prefix = redistest.Client(t)
		x.cfg.Redis.URL, x.cfg.Redis.Prefix = redistest.URL(), x.prefix
	}
	// The worker consumer records the fleet's stores, as app.Connect makes
	// it (on Redis with the id the stores keep there), so that the
	// replayer's check of its stores (checkFleetStores) passes.
	x.sc = StreamsConfig(x.cfg)
	if withRedis {
		id, err := app.RedisStoresID(ctx, x.rdb, x.prefix)
		if err != nil {
			t.Fatal(err)
		}
		x.sc.WorkerStores = app.RedisStoresIdentity(x.cfg.Worker(), id)
	}
	sc := x.sc
	if _, err := streams.Ensure(ctx, js, sc); err != nil {
		t.Fatal(err)
	}
	x.pub = dlq.NewPublisher(js, dlq.Config{Stream: sc.DLQStream, Prefix: sc.DLQPrefix})
	if withRedis {
		st, err := app.OpenStores(ctx, x.cfg.Worker(), js, x.rdb)
		if err != nil {
			t.Fatal(err)
		}
		orders := support.NewRedisOrders(x.rdb, x.prefix)
		st.Orders, st.Refunds = orders, orders.Refunds
		x.stores = st
	} else {
		// A NATS-only fleet's workers have created the KV stores' buckets
		// (the replayer only opens them).
		if _, err := app.OpenStores(ctx, x.cfg.Worker(), js, nil); err != nil {
			t.Fatal(err)
		}
	}
	return x
}

// env returns the environment the CLI runs with.
func (x *fx) lookup(extra map[string]string) func(string) (string, bool) {
	env := map[string]string{"AGENTFLEET_NATS_URL": x.url}
	if x.rdb != nil {
		env["AGENTFLEET_REDIS_URL"] = redistest.URL()
		env["AGENTFLEET_REDIS_PREFIX"] = x.prefix
	}
	for k, v := range extra {
		env[k] = v
	}
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// syncBuf is a goroutine-safe buffer.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type runOut struct {
	code           int
	stdout, stderr string
}

// run runs the CLI in process.
func (x *fx) run(ctx context.Context, extraEnv map[string]string, args ...string) runOut {
	x.t.Helper()
	var out, errb syncBuf
	code := Run(ctx, args, Env{Stdout: &out, Stderr: &errb, Lookup: x.lookup(extraEnv)})
	return runOut{code, out.String(), errb.String()}
}

// runBuf is run writing to the given buffers (to watch a long run).
func (x *fx) runBuf(ctx context.Context, extraEnv map[string]string, out, errb io.Writer, args ...string) int {
	return Run(ctx, args, Env{Stdout: out, Stderr: errb, Lookup: x.lookup(extraEnv)})
}

// request returns a valid support request.
func request(id, order string) *envelope.Request {
	return &envelope.Request{V: envelope.Version, InvocationID: id, Agent: "support", UserID: "u-" + id, SessionID: "s-" + id,
		Message: model.NewTextContent(model.RoleUser, "Please refund order "+order+", it arrived damaged.")}
}

// seed publishes n entries of class for agent support, ids prefix-0.., and
// returns the ids.
func (x *fx) seed(prefix string, n int, class string, replayCount int) []string {
	x.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		data, _ := request(id, fmt.Sprintf("A-%d", 1001+i%100)).Encode()
		e := &dlq.Entry{InvocationID: id, Agent: "support", Class: class, Reason: "model 503 after retries",
			Retryable: AutoReplayable(class), DeliveryCount: 1, ReplayCount: replayCount, Worker: "w-test", Model: "sim:support"}
		e.SetRequest(data)
		if _, err := x.pub.Publish(ctx, e); err != nil {
			x.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// streamState returns a stream's state.
func (x *fx) streamState(name string) jetstream.StreamState {
	x.t.Helper()
	s, err := x.js.Stream(context.Background(), name)
	if err != nil {
		x.t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		x.t.Fatal(err)
	}
	return info.State
}

// dlqIDs lists the invocation ids in the DLQ (bad entries as "bad").
func (x *fx) dlqIDs() []string {
	x.t.Helper()
	var out []string
	r := dlq.NewReader(x.js, dlq.Config{Stream: x.sc.DLQStream, Prefix: x.sc.DLQPrefix})
	for it, err := range r.List(context.Background(), dlq.Filter{}) {
		if it == nil {
			x.t.Fatal(err)
		}
		if it.Entry == nil {
			out = append(out, "bad")
			continue
		}
		out = append(out, it.Entry.InvocationID)
	}
	return out
}

// requestMsgIDs returns the Nats-Msg-Id of every request stored in
// AGENT_REQUESTS (no worker running: nothing was consumed), counted.
func (x *fx) requestMsgIDs() map[string]int {
	x.t.Helper()
	ctx := context.Background()
	s, err := x.js.Stream(ctx, x.sc.RequestsStream)
	if err != nil {
		x.t.Fatal(err)
	}
	out := map[string]int{}
	for seq := uint64(1); ; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			info, ierr := s.Info(ctx)
			if ierr != nil {
				x.t.Fatal(ierr)
			}
			if seq > info.State.LastSeq {
				return out
			}
			continue
		}
		out[m.Header.Get(envelope.HeaderMsgID)]++
	}
}

func eventually(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testWorker is a real worker (internal/worker) running the shipped support
// agent (app.SupportAgent: the idempotent refund, the taxonomy callbacks)
// on the fleet's Redis stores with model m.
type testWorker struct {
	cancel context.CancelFunc
	done   chan error
}

func (x *fx) startWorker(name string, m model.Model) *testWorker {
	x.t.Helper()
	wc := x.cfg.Worker()
	wc.Model.Retry.Attempts, wc.Model.Retry.Initial, wc.Model.Retry.Max = 1, time.Millisecond, time.Millisecond
	wc.Cooldown.Disabled = true
	chain, err := app.ModelChain(m, wc.Model, x.stores.Cooldown, wc.Cooldown, nil, nil)
	if err != nil {
		x.t.Fatal(err)
	}
	log := zerolog.New(zerolog.NewTestWriter(x.t)).Level(zerolog.ErrorLevel)
	sup := app.SupportAgent(wc, chain, x.stores, nil, nil, log)
	w, err := worker.New(context.Background(), worker.Config{
		Name: name, Concurrency: 8, FetchWait: 100 * time.Millisecond, BusyDelay: 50 * time.Millisecond,
		InfraBackoffMax: 200 * time.Millisecond, DrainTimeout: 5 * time.Second,
	}, worker.Deps{
		JS: x.js, Streams: x.sc,
		Agents:      map[string]*agent.Runner{sup.Name: {Agent: sup, Sessions: x.stores.Sessions, Logger: log}},
		Locker:      x.stores.Locker,
		Invocations: x.stores.Invocations,
		DLQ:         x.pub,
		Logger:      log,
	})
	if err != nil {
		x.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tw := &testWorker{cancel: cancel, done: make(chan error, 1)}
	go func() { tw.done <- w.Run(ctx) }()
	x.t.Cleanup(tw.stop)
	return tw
}

func (w *testWorker) stop() {
	w.cancel()
	<-w.done
	w.done <- nil // stop is idempotent
}

// submit publishes requests as a producer would.
func (x *fx) submit(reqs ...*envelope.Request) {
	x.t.Helper()
	for _, r := range reqs {
		data, _ := r.Encode()
		msg := &nats.Msg{Subject: x.sc.RequestSubject(r.Agent), Data: data, Header: nats.Header{}}
		msg.Header.Set(envelope.HeaderMsgID, r.InvocationID)
		if _, err := x.js.PublishMsg(context.Background(), msg); err != nil {
			x.t.Fatal(err)
		}
	}
}

// results collects results by invocation id (the last one seen).
type results struct {
	mu  sync.Mutex
	all map[string][]*envelope.Result
}

func (x *fx) watchResults() *results {
	x.t.Helper()
	r := &results{all: map[string][]*envelope.Result{}}
	sub, err := x.nc.Subscribe(x.sc.ResultSubject("*"), func(m *nats.Msg) {
		if res, err := envelope.DecodeResult(m.Data); err == nil {
			r.mu.Lock()
			r.all[res.InvocationID] = append(r.all[res.InvocationID], res)
			r.mu.Unlock()
		}
	})
	if err != nil {
		x.t.Fatal(err)
	}
	x.t.Cleanup(func() { _ = sub.Unsubscribe() })
	return r
}

// count returns how many ids have at least n results, the last of status st.
func (r *results) count(ids []string, st envelope.Status) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, id := range ids {
		if rs := r.all[id]; len(rs) > 0 && rs[len(rs)-1].Status == st {
			n++
		}
	}
	return n
}

// refundsByInvocation counts executed refunds per invocation.
func (x *fx) refundsByInvocation() map[string]int {
	x.t.Helper()
	rfs, err := x.stores.Refunds(context.Background())
	if err != nil {
		x.t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range rfs {
		out[r.InvocationID]++
	}
	return out
}

// must fails the test unless the output's code is want.
func (o runOut) must(t testing.TB, want int, what string) runOut {
	t.Helper()
	if o.code != want {
		t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", what, o.code, want, o.stdout, o.stderr)
	}
	return o
}

func contains(t testing.TB, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Fatalf("output lacks %q:\n%s", sub, s)
		}
	}
}

var _ = session.ErrNotFound

func nopLog() zerolog.Logger { return zerolog.Nop() }

// openAndPlan opens the fleet (closed when the test ends) and plans sel.
func (x *fx) openAndPlan(ctx context.Context, sel Selection) (*Fleet, []Planned) {
	x.t.Helper()
	f, err := OpenFleet(ctx, x.cfg, false, nopLog())
	if err != nil {
		x.t.Fatal(err)
	}
	x.t.Cleanup(f.Close)
	plan, err := Plan(ctx, f, sel)
	if err != nil {
		x.t.Fatal(err)
	}
	return f, plan
}

// drainRun is a `drain --metrics-addr 127.0.0.1:0` running in the
// background: get fetches a path from its HTTP server, stop cancels it and
// returns its exit code, stderr is its log.
type drainRun struct {
	get    func(path string) (int, string)
	stop   func() int
	stderr *syncBuf
}

// startDrainWithMetrics starts drain with env and waits for its metrics
// address.
func startDrainWithMetrics(t *testing.T, x *fx, env map[string]string) *drainRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var o, e syncBuf
	done := make(chan int, 1)
	go func() { done <- x.runBuf(ctx, env, &o, &e, "drain", "--metrics-addr", "127.0.0.1:0") }()
	stopped := false
	var code int
	stop := func() int {
		if !stopped {
			stopped = true
			cancel()
			code = <-done
		}
		return code
	}
	t.Cleanup(func() { stop() })
	addrRE := regexp.MustCompile(`on (127\.0\.0\.1:\d+)`)
	eventually(t, "metrics address", 10*time.Second, func() bool { return addrRE.MatchString(e.String()) })
	addr := addrRE.FindStringSubmatch(e.String())[1]
	get := func(path string) (int, string) {
		r, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	return &drainRun{get: get, stop: stop, stderr: &e}
}
