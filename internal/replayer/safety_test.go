package replayer

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// putBad stores an undecodable and a truncated entry on the DLQ.
func (x *fx) putBad(ctx context.Context) {
	x.t.Helper()
	if _, err := x.js.Publish(ctx, x.sc.DLQSubject("SERVER", "support"), []byte("this is not json")); err != nil {
		x.t.Fatal(err)
	}
	e := &dlq.Entry{V: 1, InvocationID: "trunc", Agent: "support", Class: "SERVER", FailedAt: time.Now(), FirstFailedAt: time.Now()}
	e.SetRequest([]byte(`{"v":1}`))
	good, _ := e.Encode()
	if _, err := x.js.Publish(ctx, x.sc.DLQSubject("SERVER", "support"), good[:len(good)/2]); err != nil {
		x.t.Fatal(err)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	ids := x.seed("dry", 5, "SERVER", 0)
	x.seed("loop", 2, "CALL_BUDGET", 0)
	x.seed("old", 1, "SERVER", 3)
	x.putBad(ctx)
	before := x.streamState(x.sc.DLQStream)
	cons, _ := x.js.Consumer(ctx, x.sc.DLQStream, x.sc.ReplayerConsumer)
	// The server counts a consumer's pending messages a moment after the
	// publish returned: wait until it has counted all of them, or the
	// comparison below sees that update instead of a change (a CI flake:
	// NumPending 9 -> 10).
	var ci *jetstream.ConsumerInfo
	eventually(t, "the consumer counts every seeded entry", 5*time.Second, func() bool {
		ci, _ = cons.Info(ctx)
		return ci != nil && ci.NumPending == before.Msgs
	})

	out := x.run(ctx, nil, "replay", "--dry-run").must(t, ExitOK, "dry run")
	for _, id := range ids {
		contains(t, out.stdout, "replay:"+id+":1")
	}
	contains(t, out.stdout, "loop-0", "skip", "CALL_BUDGET entries need a person", "park", "old-0", "already replayed 3 times", "bad",
		"would replay 5, park 1, skip 2; 2 bad entries; nothing was changed")
	js := x.run(ctx, nil, "replay", "--dry-run", "--json", "--class", "SERVER").must(t, ExitOK, "dry run json")
	var plan []PlannedJSON
	if err := json.Unmarshal([]byte(js.stdout), &plan); err != nil || len(plan) != 8 {
		t.Fatalf("dry-run json: %v %d\n%s", err, len(plan), js.stdout)
	}

	after := x.streamState(x.sc.DLQStream)
	if after.Msgs != before.Msgs || after.LastSeq != before.LastSeq || after.FirstSeq != before.FirstSeq || after.NumDeleted != before.NumDeleted {
		t.Fatalf("DLQ changed: %+v -> %+v", before, after)
	}
	ci2, _ := cons.Info(ctx)
	if ci2.Delivered != ci.Delivered || ci2.NumAckPending != 0 || ci2.NumPending != ci.NumPending {
		t.Fatalf("consumer changed: %+v -> %+v", ci, ci2)
	}
	if st := x.streamState(x.sc.RequestsStream); st.Msgs != 0 || st.LastSeq != 0 {
		t.Fatalf("requests published: %+v", st)
	}
	if _, err := x.js.Stream(ctx, x.cfg.Replay.ParkedStream); err == nil {
		t.Fatal("dry run created the parked stream")
	}
}

func TestNonReplayableClassesRefused(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("loop", 3, "CALL_BUDGET", 0)
	x.seed("bad", 1, "BAD_INPUT", 0)
	x.seed("srv", 2, "SERVER", 0)

	out := x.run(ctx, nil, "replay", "--yes", "--class", "CALL_BUDGET").must(t, ExitHalted, "refused class")
	contains(t, out.stderr, "CALL_BUDGET entries need a person: the model looped; fix the prompt or tools first, then replay with --class CALL_BUDGET --force")
	out = x.run(ctx, nil, "replay", "--yes", "--class", "bad_input").must(t, ExitHalted, "refused BAD_INPUT")
	contains(t, out.stderr, "BAD_INPUT entries can never run")
	x.run(ctx, nil, "replay", "--yes", "--force").must(t, ExitUsage, "--force without --class")
	if n := len(x.requestMsgIDs()); n != 0 {
		t.Fatalf("%d requests published by refused runs", n)
	}
	// No filter: the auto-replayable entries are replayed, the rest skipped.
	out = x.run(ctx, nil, "replay", "--yes").must(t, ExitOK, "replay all")
	if s := parseSummaryTotal(t, out.stdout); s["REPLAYED"] != 2 || s["SKIPPED"] != 4 {
		t.Fatalf("summary %v\n%s", s, out.stdout)
	}
	// Named with --force after the fix: replayed.
	out = x.run(ctx, nil, "replay", "--yes", "--class", "CALL_BUDGET", "--force").must(t, ExitOK, "forced")
	if s := parseSummaryTotal(t, out.stdout); s["REPLAYED"] != 3 {
		t.Fatalf("forced summary %v", s)
	}
	ids := x.requestMsgIDs()
	for _, id := range []string{"replay:loop-0:1", "replay:loop-2:1", "replay:srv-1:1"} {
		if ids[id] != 1 {
			t.Fatalf("%s published %d times: %v", id, ids[id], ids)
		}
	}
	if left := x.dlqIDs(); len(left) != 1 || left[0] != "bad-0" {
		t.Fatalf("left in the DLQ: %v", left)
	}
}

func TestParkingAfterReplayLimit(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("tired", 2, "SERVER", 3)
	x.seed("fresh", 1, "SERVER", 2)
	out := x.run(ctx, nil, "replay", "--yes").must(t, ExitOK, "replay")
	if s := parseSummaryTotal(t, out.stdout); s["PARKED"] != 2 || s["REPLAYED"] != 1 {
		t.Fatalf("summary %v\n%s", s, out.stdout)
	}
	if ids := x.requestMsgIDs(); len(ids) != 1 || ids["replay:fresh-0:3"] != 1 {
		t.Fatalf("published %v", ids)
	}
	if left := x.dlqIDs(); len(left) != 0 {
		t.Fatalf("DLQ: %v", left)
	}
	if st := x.streamState(x.cfg.Replay.ParkedStream); st.Msgs != 2 {
		t.Fatalf("parked stream: %+v", st)
	}
	lst := x.run(ctx, nil, "list", "--parked", "--json").must(t, ExitOK, "list parked")
	var parked []ListedEntry
	if err := json.Unmarshal([]byte(lst.stdout), &parked); err != nil || len(parked) != 2 {
		t.Fatalf("list --parked: %v\n%s", err, lst.stdout)
	}
	if h := parked[0].Entry.History; len(h) != 1 || h[0].ReplayCount != 3 || h[0].Class != "SERVER" {
		t.Fatalf("history not kept: %+v", parked[0].Entry)
	}
	st := x.run(ctx, nil, "stats").must(t, ExitOK, "stats")
	contains(t, st.stdout, "parked 2")
	// Parked entries are never replayed again.
	again := x.run(ctx, nil, "replay", "--yes").must(t, ExitOK, "again")
	if s := parseSummaryTotal(t, again.stdout); s["REPLAYED"]+s["PARKED"] != 0 {
		t.Fatalf("second run touched parked entries: %v", s)
	}
	// park by hand, with the same filters; the parked stream is created
	// idempotently.
	x.seed("manual", 2, "UNKNOWN", 0)
	x.run(ctx, nil, "park", "--class", "UNKNOWN", "--yes").must(t, ExitOK, "park")
	if st := x.streamState(x.cfg.Replay.ParkedStream); st.Msgs != 4 {
		t.Fatalf("parked stream after park: %+v", st)
	}
	x.run(ctx, nil, "park").must(t, ExitUsage, "park without a filter")
}

func TestBadEntriesAreReportedNotCrashedOn(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("ok", 2, "SERVER", 0)
	x.putBad(ctx)
	st := x.run(ctx, nil, "stats").must(t, ExitOK, "stats")
	contains(t, st.stdout, "bad entries 2", "SERVER", "support")
	lst := x.run(ctx, nil, "list").must(t, ExitOK, "list")
	contains(t, lst.stdout, "BAD ENTRY", "not a JSON object", "truncated", "4 entries (2 bad)")
	lj := x.run(ctx, nil, "list", "--json").must(t, ExitOK, "list json")
	var les []ListedEntry
	if err := json.Unmarshal([]byte(lj.stdout), &les); err != nil || len(les) != 4 || les[2].Error == "" {
		t.Fatalf("list --json: %v %+v", err, les)
	}
	out := x.run(ctx, nil, "replay", "--yes").must(t, ExitOK, "replay")
	if s := parseSummaryTotal(t, out.stdout); s["REPLAYED"] != 2 || s["BAD"] != 2 {
		t.Fatalf("summary %v", s)
	}
	contains(t, out.stderr, "BAD ENTRY left in the DLQ")
	if left := x.dlqIDs(); len(left) != 2 {
		t.Fatalf("bad entries must stay: %v", left)
	}
	// A dry run says what it would do, not "purged", and changes nothing.
	dry := x.run(ctx, nil, "purge", "--class", "SERVER", "--dry-run").must(t, ExitOK, "purge --dry-run")
	contains(t, dry.stdout, "would be purged", "nothing was changed")
	if strings.Contains(strings.ReplaceAll(dry.stdout, "would be purged", ""), "purged") {
		t.Fatalf("purge --dry-run says purged:\n%s", dry.stdout)
	}
	if left := x.dlqIDs(); len(left) != 2 {
		t.Fatalf("purge --dry-run changed the DLQ: %v", left)
	}
	// purge needs a confirmation, then removes them.
	x.run(ctx, nil, "purge", "--class", "SERVER").must(t, ExitHalted, "purge without --yes")
	p := x.run(ctx, nil, "purge", "--class", "SERVER", "--yes").must(t, ExitOK, "purge")
	contains(t, p.stdout, "purged 2 entries")
	if left := x.dlqIDs(); len(left) != 0 {
		t.Fatalf("after purge: %v", left)
	}
}

func TestConfirmationAboveThreshold(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("c", 5, "SERVER", 0)
	env := map[string]string{"AGENTFLEET_REPLAY_CONFIRM_ABOVE": "3"}
	out := x.run(ctx, env, "replay").must(t, ExitHalted, "no --yes, not a terminal")
	contains(t, out.stderr, "refusing to replay 5 entries without confirmation", "--yes")
	if n := len(x.requestMsgIDs()); n != 0 {
		t.Fatalf("published %d", n)
	}
	// On a terminal the answer decides.
	var o, e syncBuf
	code := Run(ctx, []string{"replay"}, Env{Stdout: &o, Stderr: &e, Stdin: strings.NewReader("no\n"), Lookup: x.lookup(env),
		Terminal: func(s any) bool { _, ok := s.(*strings.Reader); return ok }})
	if code != ExitHalted || len(x.requestMsgIDs()) != 0 {
		t.Fatalf("declined: exit %d, published %d\n%s", code, len(x.requestMsgIDs()), e.String())
	}
	code = Run(ctx, []string{"replay"}, Env{Stdout: &o, Stderr: &e, Stdin: strings.NewReader("yes\n"), Lookup: x.lookup(env),
		Terminal: func(s any) bool { _, ok := s.(*strings.Reader); return ok }})
	if code != ExitOK || len(x.requestMsgIDs()) != 5 {
		t.Fatalf("confirmed: exit %d, published %d\n%s", code, len(x.requestMsgIDs()), e.String())
	}
	// Usage errors are 3, not 2.
	for _, args := range [][]string{{}, {"bogus"}, {"show"}, {"show", "a.b"}, {"replay", "--rate", "-1"}, {"list", "--since", "yesterday"}, {"stats", "x"}} {
		if r := x.run(ctx, nil, args...); r.code != ExitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", args, r.code, ExitUsage, r.stderr)
		}
	}
	x.run(ctx, nil, "show", "nobody").must(t, ExitError, "show of an unknown invocation (no stores)")
}

// Two replayers started at once over the same DLQ: every entry is
// republished exactly once.
func TestTwoConcurrentReplayers(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	const n = 300
	x.seed("two", n, "SERVER", 0)
	outs := make([]runOut, 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range outs {
		wg.Go(func() {
			<-start
			outs[i] = x.run(ctx, nil, "replay", "--yes", "--rate", "0", "--concurrency", "8")
		})
	}
	close(start)
	wg.Wait()
	replayed, already := 0, 0
	for i, o := range outs {
		o.must(t, ExitOK, "replayer "+string(rune('A'+i)))
		s := parseSummaryTotal(t, o.stdout)
		replayed += s["REPLAYED"]
		already += s["ALREADY REPLAYED"]
	}
	ids := x.requestMsgIDs()
	if len(ids) != n || replayed != n {
		t.Fatalf("%d distinct requests stored, %d counted as replayed; want %d", len(ids), replayed, n)
	}
	for id, c := range ids {
		if c != 1 {
			t.Fatalf("%s stored %d times", id, c)
		}
	}
	if left := x.dlqIDs(); len(left) != 0 {
		t.Fatalf("DLQ not empty: %d", len(left))
	}
	t.Logf("replayer A+B: %d replayed, %d found already replayed by the other", replayed, already)
}

// A replayer killed after k replays (between a PubAck and the DLQ delete)
// and started again finishes with nothing lost and nothing doubled.
func TestKilledReplayerRestartsWithoutLossOrDuplicates(t *testing.T) {
	x := newFx(t, false)
	const n, k = 50, 20
	x.seed("kill", n, "SERVER", 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, plan := x.openAndPlan(ctx, Selection{MaxReplays: 3})
	var mu sync.Mutex
	published := 0
	errKilled := errors.New("killed")
	err := Execute(ctx, f, plan, ExecOptions{Concurrency: 4, afterPublish: func(Planned) error {
		mu.Lock()
		defer mu.Unlock()
		published++
		if published == k {
			cancel() // the process dies here: published, not yet deleted
			return errKilled
		}
		return nil
	}})
	if !errors.Is(err, errKilled) && !errors.Is(err, context.Canceled) {
		t.Fatalf("Execute = %v", err)
	}
	mid := x.requestMsgIDs()
	left := x.dlqIDs()
	if len(mid) < k || len(mid)+len(left) < n {
		t.Fatalf("after the kill: %d published, %d left in the DLQ: something was lost", len(mid), len(left))
	}
	out := x.run(ctxT(t), nil, "replay", "--yes", "--rate", "0").must(t, ExitOK, "restart")
	s := parseSummaryTotal(t, out.stdout)
	if s["ALREADY REPLAYED"] < 1 {
		t.Fatalf("the entry published before the kill was not recognised: %v\n%s", s, out.stderr)
	}
	ids := x.requestMsgIDs()
	if len(ids) != n {
		t.Fatalf("%d distinct requests, want %d", len(ids), n)
	}
	for id, c := range ids {
		if c != 1 {
			t.Fatalf("%s stored %d times", id, c)
		}
	}
	if left := x.dlqIDs(); len(left) != 0 {
		t.Fatalf("DLQ not empty: %v", left)
	}
}
