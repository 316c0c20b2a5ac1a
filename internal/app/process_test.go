package app_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/testmain"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// workerBin is this test binary, which runs as the worker when started with
// testmain.Env(testmain.Worker) (see TestMain and internal/testmain): no
// `go build` of ./cmd/worker inside the tests.
var workerBin string

func TestMain(m *testing.M) {
	testmain.Dispatch() // a worker process started by a test
	var err error
	if workerBin, err = testmain.Executable(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// fleet is an embedded NATS server in the test process and worker
// processes pointed at it and at the local Redis under a prefix of its own.
type fleet struct {
	t      *testing.T
	url    string
	rdb    *redis.Client
	prefix string
	js     jetstream.JetStream
	cl     *client.Client
	env    []string
}

func newFleet(t *testing.T, extraEnv ...string) *fleet {
	t.Helper()
	s := natstest.RunServer(t)
	nc := natstest.Connect(t, s)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	rdb, prefix := redistest.Client(t)
	f := &fleet{t: t, url: s.ClientURL(), rdb: rdb, prefix: prefix, js: js}
	f.env = append(os.Environ(),
		testmain.Env(testmain.Worker),
		"AGENTFLEET_NATS_URL="+f.url,
		"AGENTFLEET_REDIS_URL="+redistest.URL(),
		"AGENTFLEET_REDIS_PREFIX="+prefix,
		"AGENTFLEET_REDIS_DEMO_PREFIX="+prefix,
		"AGENTFLEET_METRICS_ADDR=",
		"AGENTFLEET_STREAMS_ACK_WAIT=3s",
		"AGENTFLEET_WORKER_SESSION_LEASE=5s",
		"AGENTFLEET_LOG_LEVEL=warn",
	)
	f.env = append(f.env, extraEnv...)
	sc := streams.Config{}.WithDefaults()
	if _, err := streams.Ensure(context.Background(), js, streams.Config{WorkerAckWait: 3 * time.Second}.WithDefaults()); err != nil {
		t.Fatal(err)
	}
	f.cl, err = client.New(js, nc, client.Config{RequestsStream: sc.RequestsStream, ResultsStream: sc.ResultsStream,
		RequestPrefix: sc.RequestPrefix, ResultPrefix: sc.ResultPrefix})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fleet) start(name string, env ...string) *exec.Cmd {
	f.t.Helper()
	cmd := exec.Command(workerBin, "--name", name)
	cmd.Env = append(append([]string(nil), f.env...), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

func (f *fleet) refunds() int64 {
	n, err := f.rdb.LLen(context.Background(), f.prefix+"demo:refunds").Result()
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// requestsLeft returns how many requests the work queue holds (not acked).
func (f *fleet) requestsLeft() uint64 {
	ctx := context.Background()
	s, err := f.js.Stream(ctx, streams.DefaultRequestsStream)
	if err != nil {
		f.t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return info.State.Msgs
}

// diagnose logs what the stores say about an invocation that got no result.
func (f *fleet) diagnose(id string) {
	ctx := context.Background()
	it := f.rdb.Scan(ctx, 0, f.prefix+"*", 500).Iterator()
	for it.Next(ctx) {
		if k := it.Val(); strings.Contains(k, id) {
			typ, _ := f.rdb.Type(ctx, k).Result()
			switch typ {
			case "string":
				v, _ := f.rdb.Get(ctx, k).Result()
				f.t.Logf("%s = %s", k, v)
			case "hash":
				v, _ := f.rdb.HGetAll(ctx, k).Result()
				f.t.Logf("%s = %v", k, v)
			default:
				f.t.Logf("%s (%s)", k, typ)
			}
		}
	}
	if s, err := f.js.Stream(ctx, streams.DefaultRequestsStream); err == nil {
		if info, err := s.Info(ctx); err == nil {
			f.t.Logf("requests stream: %d messages", info.State.Msgs)
		}
		if c, err := s.Consumer(ctx, streams.DefaultWorkerConsumer); err == nil {
			if ci, err := c.Info(ctx); err == nil {
				f.t.Logf("workers consumer: %d pending, %d ack pending, %d redelivered, %d waiting pulls",
					ci.NumPending, ci.NumAckPending, ci.NumRedelivered, ci.NumWaiting)
			}
		}
	}
	// A stored result means the invocation finished and the waiter missed
	// it; none means it never finished.
	if st, err := f.cl.Lookup(ctx, id); err == nil {
		f.t.Logf("results stream: %s has a result at seq %d (%s, stored %s): the waiter missed it",
			id, st.Seq, st.Status, st.Time.Format(time.RFC3339Nano))
	} else {
		f.t.Logf("results stream: %v", err)
	}
}

func supportRequest(id, order string) *envelope.Request {
	return &envelope.Request{InvocationID: id, Agent: "support", UserID: "u-" + id, SessionID: "s-" + id,
		Message: model.NewTextContent(model.RoleUser, "Please refund order "+order+", it arrived damaged.")}
}

func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A worker process SIGKILLed after the refund and before the final answer:
// another worker resumes, and there is exactly one refund record and one
// result.
func TestKilledAfterRefundResumesWithoutSecondRefund(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	f := newFleet(t, "AGENTFLEET_MODEL_SIM_LATENCY=1500ms")
	w1 := f.start("w1")
	ctx := context.Background()
	if _, err := f.cl.Submit(ctx, supportRequest("inv-kill", "A-1042")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the refund", 60*time.Second, func() bool { return f.refunds() == 1 })
	if err := w1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = w1.Wait()

	f.start("w2")
	actx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	res, err := f.cl.Await(actx, "inv-kill")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != envelope.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	if n := f.refunds(); n != 1 {
		t.Fatalf("demo:refunds holds %d records, want exactly 1", n)
	}
	// The result can reach Await before the stream stores it; the worker
	// acks the request after the result's PubAck.
	waitFor(t, "the request acked", 30*time.Second, func() bool { return f.requestsLeft() == 0 })
	s, err := f.js.Stream(ctx, streams.DefaultResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.LastSeq != 1 {
		t.Fatalf("%d results were published, want exactly 1", info.State.LastSeq)
	}
}

// SIGTERM with invocations in flight: the worker drains, stops the rest at
// a step boundary and Naks them; another worker completes them. None lost,
// no refund doubled.
func TestSIGTERMWithInvocationsInFlightLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	// Short idempotency leases: a refund claim orphaned by the stop expires
	// quickly instead of making the resumed run wait 30 s.
	f := newFleet(t, "AGENTFLEET_MODEL_SIM_LATENCY=400ms", "AGENTFLEET_WORKER_DRAIN_TIMEOUT=300ms", "AGENTFLEET_IDEMPOTENCY_LEASE=3s")
	w1 := f.start("w1")
	ctx := context.Background()
	const n = 12
	for i := range n {
		if _, err := f.cl.Submit(ctx, supportRequest(fmt.Sprintf("inv-term-%d", i), fmt.Sprintf("A-%d", 1001+i))); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "work in flight", 60*time.Second, func() bool { return f.refunds() >= 1 })
	if err := w1.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := w1.Wait(); err != nil {
		t.Fatalf("worker did not exit cleanly on SIGTERM: %v", err)
	}
	f.start("w2")
	actx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	for i := range n {
		id := fmt.Sprintf("inv-term-%d", i)
		res, err := f.cl.Await(actx, id)
		if err != nil {
			f.diagnose(id)
			t.Fatalf("%s: %v", id, err)
		}
		if res.Status != envelope.StatusCompleted {
			t.Fatalf("inv-term-%d: %+v", i, res)
		}
	}
	if got := f.refunds(); got != n {
		t.Fatalf("demo:refunds holds %d records, want %d (one per invocation)", got, n)
	}
}
