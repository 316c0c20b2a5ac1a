package replayer

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// An entry whose tools_completed list was bounded (dlq.MaxToolsCompletedSize:
// the most recent names, the earlier ones counted) says so in list and
// show: a shortened list must not read as the whole one (twenty-first
// session, with the bound).
func TestListAndShowSayToolsWereLeftOut(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	now := time.Now().UTC()
	var tools []string
	for i := range 400 {
		tools = append(tools, fmt.Sprintf("lookup_customer_%03d", i))
	}
	e := &dlq.Entry{V: 1, InvocationID: "many-tools", Agent: "support", Class: "SERVER", Reason: "boom",
		FailedAt: now, FirstFailedAt: now, ToolsCompleted: tools}
	// The Publisher's bound, as a dead letter gets it.
	if _, err := e.EncodeToFit(0); err != nil {
		t.Fatal(err)
	}
	if e.ToolsCompletedOmitted == 0 || e.ToolsCompleted[len(e.ToolsCompleted)-1] != "lookup_customer_399" {
		t.Fatalf("test premise: omitted %d, last %q", e.ToolsCompletedOmitted, e.ToolsCompleted[len(e.ToolsCompleted)-1])
	}
	x.putEntry(ctx, e, nil)

	list := x.run(ctx, nil, "list").must(t, ExitOK, "list")
	// The cell keeps the end of the list (the most recent tools, which the
	// bound keeps too) and counts every earlier one.
	shown := 0
	for _, name := range e.ToolsCompleted {
		if strings.Contains(list.stdout, name+",") || strings.Contains(list.stdout, name+" ") {
			shown++
		}
	}
	want := fmt.Sprintf("+%d earlier,", 400-shown)
	contains(t, list.stdout, want, "lookup_customer_399")
	for _, l := range strings.Split(list.stdout, "\n") {
		if len(l) > 400 {
			t.Errorf("list row of %d bytes: the TOOLS DONE cell is not clipped:\n%.200s…", len(l), l)
		}
	}
	show := x.run(ctx, nil, "show", "many-tools").must(t, ExitOK, "show")
	contains(t, show.stdout, fmt.Sprintf("tools completed before the failure (%d earlier ones not listed): ", e.ToolsCompletedOmitted), "lookup_customer_399")
}
