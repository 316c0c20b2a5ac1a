package replayer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// A simulated outage dead-letters every request (half of them after their
// refund ran); once the provider is back, "replay --yes --wait" completes
// every entry, and no refund is executed twice.
func TestReplayAfterOutageCompletesWithoutDuplicateRefunds(t *testing.T) {
	x := newFx(t, true)
	res := x.watchResults()
	const n = 12
	var ids []string
	for i := range n {
		id := fmt.Sprintf("out-%d", i)
		ids = append(ids, id)
		x.submit(request(id, fmt.Sprintf("A-%d", 1001+i)))
	}
	w1 := x.startWorker("w-outage", &outage{healthy: simModel(t, ""), down: simModel(t, "server=1.0")})
	eventually(t, "every request dead-lettered", 30*time.Second, func() bool { return res.count(ids, envelope.StatusDeadLettered) == n })
	w1.stop()
	eventually(t, "12 DLQ entries", 10*time.Second, func() bool { return len(x.dlqIDs()) == n })
	before := x.refundsByInvocation()
	if len(before) != n/2 {
		t.Fatalf("refunds before the failure: %v, want the %d even orders", before, n/2)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// on-call sees that the refund already happened.
	sh := x.run(ctx, nil, "show", "out-1").must(t, ExitOK, "show")
	contains(t, sh.stdout, "class SERVER (auto-replayable)", "refund_order completed", "ALREADY DONE", "call: refund_order", "tools completed before the failure: get_order, refund_order")

	x.startWorker("w-healthy", simModel(t, ""))
	out := x.run(ctx, nil, "replay", "--yes", "--wait", "--rate", "0").must(t, ExitOK, "replay")
	contains(t, out.stdout, "SERVER", "total")
	sum := parseSummaryTotal(t, out.stdout)
	if sum["REPLAYED"] != n || sum["COMPLETED"] != n || sum["DEAD-LETTERED AGAIN"] != 0 {
		t.Fatalf("summary %v\n%s\n%s", sum, out.stdout, out.stderr)
	}
	eventually(t, "every result completed", 10*time.Second, func() bool { return res.count(ids, envelope.StatusCompleted) == n })
	if left := x.dlqIDs(); len(left) != 0 {
		t.Fatalf("DLQ not empty: %v", left)
	}
	after := x.refundsByInvocation()
	for _, id := range ids {
		if after[id] != 1 {
			t.Errorf("%s: %d refunds, want exactly 1 (before the replay: %d)", id, after[id], before[id])
		}
	}
	// Nothing left to do: a second run replays nothing.
	again := x.run(ctx, nil, "replay", "--yes").must(t, ExitOK, "second replay")
	if s := parseSummaryTotal(t, again.stdout); s["REPLAYED"] != 0 {
		t.Fatalf("second run: %v", s)
	}
}

// parseSummaryTotal reads the total row of the summary table.
func parseSummaryTotal(t testing.TB, out string) map[string]int {
	t.Helper()
	lines := strings.Split(out, "\n")
	var head []string
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "CLASS") && strings.Contains(l, "REPLAYED") {
			head = splitCols(l)
		}
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "total" && head != nil {
			out := map[string]int{}
			for i, h := range head[1:] {
				if i+1 < len(f) {
					var v int
					fmt.Sscan(f[i+1], &v)
					out[h] = v
				}
			}
			return out
		}
	}
	t.Fatalf("no summary in:\n%s", out)
	return nil
}

// splitCols splits the header on runs of two or more spaces.
func splitCols(l string) []string {
	var out []string
	for _, p := range strings.Split(strings.TrimSpace(l), "  ") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return slices.Clip(out)
}
