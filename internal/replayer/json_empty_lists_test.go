package replayer

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, eighteenth session): the --json output is
// for scripts (runbook step 1), and the empty case is the good one at 3
// a.m. `stats --json` on an empty DLQ printed "rows": null, and `show
// --json` of an invocation with no DLQ entry (it completed) printed
// "entries": null, where list --json prints [] and show itself prints
// "events": [] and "effects": []. A script doing `jq '.rows[]'` or `jq
// '.entries[]'` failed ("Cannot iterate over null") exactly when there was
// nothing to do.
func TestJSONListsAreArraysWhenEmpty(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	st := x.run(ctx, nil, "stats", "--json").must(t, ExitOK, "stats --json")
	var stats map[string]json.RawMessage
	if err := json.Unmarshal([]byte(st.stdout), &stats); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, st.stdout)
	}

	res := x.watchResults()
	x.submit(request("fine-0", "A-1001"))
	w := x.startWorker("w-ok", simModel(t, ""))
	eventually(t, "fine-0 completed", 30*time.Second, func() bool {
		return res.count([]string{"fine-0"}, envelope.StatusCompleted) == 1
	})
	w.stop()
	sh := x.run(ctx, nil, "show", "--json", "fine-0").must(t, ExitOK, "show --json")
	var shown map[string]json.RawMessage
	if err := json.Unmarshal([]byte(sh.stdout), &shown); err != nil {
		t.Fatalf("show --json: %v\n%s", err, sh.stdout)
	}

	for _, c := range []struct {
		cmd, field string
		raw        json.RawMessage
	}{{"stats --json (empty DLQ)", "rows", stats["rows"]}, {"show --json (no DLQ entry)", "entries", shown["entries"]}} {
		var arr []json.RawMessage
		if string(c.raw) == "null" || json.Unmarshal(c.raw, &arr) != nil {
			t.Errorf("%s: %q is %s, want a JSON array ([])", c.cmd, c.field, c.raw)
		}
	}
}
