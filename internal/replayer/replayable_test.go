package replayer

import (
	"encoding/json"
	"testing"
	"time"
)

// Regression (found in review, nineteenth session): stats, list and show
// called an entry "replayable" by its class alone, but replay and drain
// never replay an entry whose invocation first failed before the
// idempotency records' retention (it is skipped "first failed …, before
// …", and drain's agentfleet_dlq_replayer_entries gauge counts it
// replayable="false": it waits for a person, see
// drain_gauge_person_test.go). So at 3 a.m. `stats` said "replayable 1,
// needs a person 0" and `list --json` said "replayable": true for an entry
// that no replay or drain will ever take: on-call waited for drain to clear
// it, and the stats disagreed with the alert that pages for it. Now stats,
// list and show judge an entry by the dry run's rule (entryReplayable,
// which drain's gauge uses too) and count it as needing a person.
func TestStatsAndListCallANeverReplayedEntryReplayable(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	old := time.Now().UTC().Add(-20 * 24 * time.Hour) // past the default 15-day retention
	publishAged(t, x, "aged-st", "A-1003", 1, time.Now().UTC().Add(-time.Hour), old)

	// What replay would do with it: skip it (it never replays it).
	dry := x.run(ctx, nil, "replay", "--dry-run", "--json").must(t, ExitOK, "dry run")
	var plan []PlannedJSON
	if err := json.Unmarshal([]byte(dry.stdout), &plan); err != nil {
		t.Fatalf("dry run json: %v\n%s", err, dry.stdout)
	}
	if len(plan) != 1 || plan[0].Action != ActionSkip {
		t.Fatalf("test setup: the dry run should skip the too-old entry, got %+v", plan)
	}

	out := x.run(ctx, nil, "stats", "--json").must(t, ExitOK, "stats")
	var st Stats
	if err := json.Unmarshal([]byte(out.stdout), &st); err != nil {
		t.Fatalf("stats json: %v\n%s", err, out.stdout)
	}
	lst := x.run(ctx, nil, "list", "--json").must(t, ExitOK, "list")
	var listed []ListedEntry
	if err := json.Unmarshal([]byte(lst.stdout), &listed); err != nil {
		t.Fatalf("list json: %v\n%s", err, lst.stdout)
	}
	if st.Replayable != 0 || st.NeedPerson != 1 || len(listed) != 1 || listed[0].Replayable {
		t.Fatalf("the dry run skips the entry (%q), but stats says replayable %d, needs a person %d and list says replayable=%v: "+
			"an entry no replay or drain will take is shown as replayable\nstats:\n%s",
			plan[0].Why, st.Replayable, st.NeedPerson, len(listed) == 1 && listed[0].Replayable, out.stdout)
	}
	if len(st.Rows) != 1 || st.Rows[0].Replayable || st.Rows[0].NeedPerson != 1 || listed[0].Why == "" {
		t.Fatalf("stats row %+v, list why %q: want the row not replayable, 1 needing a person, and a reason", st.Rows, listed[0].Why)
	}
	txt := x.run(ctx, nil, "stats").must(t, ExitOK, "stats")
	contains(t, txt.stdout, "no (needs a person)", "replayable 0, needs a person 1")
	sh := x.run(ctx, nil, "show", "aged-st").must(t, ExitOK, "show")
	contains(t, sh.stdout, "class SERVER (needs a person)", "not replayed by replay or drain: first failed")

	// A fresh entry of the same class is replayable everywhere; the row
	// counts one of each.
	x.seed("fresh", 1, "SERVER", 0)
	out = x.run(ctx, nil, "stats", "--json").must(t, ExitOK, "stats")
	st = Stats{}
	if err := json.Unmarshal([]byte(out.stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.Replayable != 1 || st.NeedPerson != 1 || len(st.Rows) != 1 || st.Rows[0].NeedPerson != 1 || st.Rows[0].Replayable {
		t.Fatalf("one fresh and one too-old SERVER entry: stats %+v", st)
	}
	txt = x.run(ctx, nil, "stats").must(t, ExitOK, "stats")
	contains(t, txt.stdout, "1 (1 need a person)")
}
