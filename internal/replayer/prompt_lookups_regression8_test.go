package replayer

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Regression (found in review of this session's fix, twenty-fifth
// session): a replay confirmed at its prompt set ExecOptions.StalePlan,
// and planMayBeStale then made EVERY replay read its DLQ entry back first
// (dlq.Reader.Gone: a direct get, a round trip per entry), even when
// nothing touched the DLQ while the prompt waited. A typed "yes" is the
// documented way to replay more than replay.confirm_above (100) entries
// on a terminal, so every large interactive replay paid the per-entry
// look-up that the eighteenth session removed because it halved the bulk
// replay's speed (TestFreshPlanReplaysWithoutReadingEachEntryBack; 0.30
// of a bare publish against the 0.5 goal).
//
// What a user saw: `replay --class SERVER` of 10 000 entries answered
// "yes" ran about half as fast as the same run with --yes. Now replay
// decides staleness once: the DLQ's state before the plan and after the
// prompt (streamMark.nothingRemovedSince); with nothing removed the plan
// is as fresh as its age, and no entry is read back.
func TestPromptedReplayWithNothingRemovedReadsNoEntryBack(t *testing.T) {
	x := newFx(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 30
	x.seed("pl", n, "SERVER", 0)
	gets := countEntryReads(t, x)

	stdin := strings.NewReader("yes\n") // typed at once: nothing changed while the prompt waited
	var o, e syncBuf
	env := Env{Stdout: &o, Stderr: &e, Stdin: stdin, Lookup: x.lookup(map[string]string{"AGENTFLEET_REPLAY_CONFIRM_ABOVE": "3"}),
		Terminal: func(s any) bool { return s == stdin }}
	if code := Run(ctx, []string{"replay", "--class", "SERVER"}, env); code != ExitOK {
		t.Fatalf("replay exit %d\nstdout:\n%s\nstderr:\n%s", code, o.String(), e.String())
	}
	if !strings.Contains(e.String(), "Type yes") {
		t.Fatalf("the replay did not prompt; stderr:\n%s", e.String())
	}
	if tot := parseSummaryTotal(t, o.String()); tot["REPLAYED"] != n || tot["ALREADY GONE"] != 0 || tot["ERRORS"] != 0 {
		t.Fatalf("summary total %v, want REPLAYED %d, ALREADY GONE 0, ERRORS 0", tot, n)
	}
	if err := x.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if g := gets.Load(); g != 0 {
		t.Errorf("a replay of %d entries confirmed at its prompt, with nothing changed in the DLQ meanwhile, read %d entries back "+
			"(one JetStream round trip per entry, the look-up that halved the bulk replay's speed); want the plan's staleness decided once, and none", n, g)
	}
}

// Regression (found in review of this session's fix, twenty-fifth
// session), the other side of the single check: while the prompt waits,
// another engineer removes 2 of the 5 planned entries and the workers
// dead-letter 2 new ones, so the DLQ holds as many messages as when the
// plan was read. The check must still see the removal (the last sequence
// moved by 2, the count did not): the 2 removed entries are counted
// "already gone" and not published, the 3 others are replayed, and the 2
// new ones (not in the plan) stay.
func TestPromptedReplayFindsEntriesRemovedWhileNewOnesArrived(t *testing.T) {
	x := newFx(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	x.seed("pr", 5, "SERVER", 0)

	p := startPrompted(ctx, t, x, "replay", "--class", "SERVER")

	// Another engineer removes pr-1 and pr-3 (a purge of those
	// invocations); two new entries arrive.
	s, err := x.js.Stream(ctx, x.sc.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	before := x.streamState(x.sc.DLQStream)
	r := dlq.NewReader(x.js, dlq.Config{Stream: x.sc.DLQStream, Prefix: x.sc.DLQPrefix})
	for it, err := range r.List(ctx, dlq.Filter{}) {
		if it == nil {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		if id := it.Entry.InvocationID; id == "pr-1" || id == "pr-3" {
			if err := s.DeleteMsg(ctx, it.Seq); err != nil {
				t.Fatal(err)
			}
		}
	}
	x.seed("new", 2, "SERVER", 0)
	if after := x.streamState(x.sc.DLQStream); after.Msgs != before.Msgs {
		t.Fatalf("the DLQ holds %d entries, want %d as when the plan was read", after.Msgs, before.Msgs)
	}

	code := p.answerYes(ctx, t)
	if code != ExitOK {
		t.Errorf("replay exit %d, want %d", code, ExitOK)
	}
	if tot := parseSummaryTotal(t, p.o.String()); tot["REPLAYED"] != 3 || tot["ALREADY GONE"] != 2 || tot["ERRORS"] != 0 {
		t.Errorf("replay summary total %v, want REPLAYED 3, ALREADY GONE 2, ERRORS 0", tot)
	}
	ids := x.requestMsgIDs()
	for _, id := range []string{"replay:pr-1:1", "replay:pr-3:1"} {
		if ids[id] != 0 {
			t.Errorf("%s published: an entry removed from the DLQ while the prompt waited was replayed (requests %v)", id, ids)
		}
	}
	if len(ids) != 3 {
		t.Errorf("requests published %v, want the replays of pr-0, pr-2 and pr-4", ids)
	}
	if left := x.dlqIDs(); len(left) != 2 || left[0] != "new-0" || left[1] != "new-1" {
		t.Errorf("the DLQ holds %v, want the 2 entries that arrived after the plan", left)
	}
}

// countEntryReads counts the reads of single DLQ entries (dlq.Reader.Gone
// and Get: a direct get, or the API's message get) from now on.
func countEntryReads(t *testing.T, x *fx) *atomic.Int32 {
	t.Helper()
	var gets atomic.Int32
	for _, subj := range []string{"$JS.API.STREAM.MSG.GET." + x.sc.DLQStream, "$JS.API.DIRECT.GET." + x.sc.DLQStream, "$JS.API.DIRECT.GET." + x.sc.DLQStream + ".>"} {
		sub, err := x.nc.Subscribe(subj, func(_ *nats.Msg) { gets.Add(1) })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	if err := x.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &gets
}

// promptedRun is a replayer command run on a terminal, waiting at its
// "Type yes to continue" prompt until answerYes.
type promptedRun struct {
	name   string // the command: park, replay
	o, e   *syncBuf
	typing *io.PipeWriter
	done   chan int
}

// startPrompted runs `args...` (args[0] the command) on a terminal with
// replay.confirm_above 3 and returns once its prompt is shown.
func startPrompted(ctx context.Context, t *testing.T, x *fx, args ...string) *promptedRun {
	t.Helper()
	stdin, typing := io.Pipe()
	t.Cleanup(func() { _ = typing.Close() })
	p := &promptedRun{name: args[0], o: new(syncBuf), e: new(syncBuf), typing: typing, done: make(chan int, 1)}
	env := Env{Stdout: p.o, Stderr: p.e, Stdin: stdin, Lookup: x.lookup(map[string]string{"AGENTFLEET_REPLAY_CONFIRM_ABOVE": "3"}),
		Terminal: func(s any) bool { return s == stdin }}
	go func() { p.done <- Run(ctx, args, env) }()
	eventually(t, "the "+p.name+" prompt is shown", 30*time.Second, func() bool { return strings.Contains(p.e.String(), "Type yes to continue") })
	return p
}

// answerYes types yes at p's prompt and returns its exit code once it
// finished, logging its output.
func (p *promptedRun) answerYes(ctx context.Context, t *testing.T) int {
	t.Helper()
	if _, err := io.WriteString(p.typing, "yes\n"); err != nil {
		t.Fatal(err)
	}
	var code int
	select {
	case code = <-p.done:
	case <-ctx.Done():
		t.Fatal(p.name + " did not finish")
	}
	t.Logf("%s exit %d\nstdout:\n%s\nstderr:\n%s", p.name, code, p.o.String(), p.e.String())
	return code
}
