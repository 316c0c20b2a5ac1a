package replayer

import (
	"testing"
)

// purge --parked deletes selected entries of the parked stream, bad ones
// included, and leaves the DLQ alone. A bad entry that was parked could
// not leave the parked stream before its max age (left open in the
// nineteenth and twentieth sessions): replay --parked cannot take it, and
// purge only walked the DLQ.
func TestPurgeParkedDeletesParkedBadEntries(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.putBad(ctx) // two bad SERVER entries
	x.seed("keep", 2, "SERVER", 0)
	x.run(ctx, nil, "park", "--class", "SERVER", "--yes").must(t, ExitOK, "park")
	if st := x.streamState(x.cfg.Replay.ParkedStream); st.Msgs != 4 {
		t.Fatalf("test premise: %d parked, want 4", st.Msgs)
	}
	x.seed("dlq", 3, "SERVER", 0) // in the DLQ: purge --parked must not touch them

	dry := x.run(ctx, nil, "purge", "--parked", "--class", "SERVER", "--dry-run").must(t, ExitOK, "purge --parked --dry-run")
	contains(t, dry.stdout, "would delete 4 entries")
	if st := x.streamState(x.cfg.Replay.ParkedStream); st.Msgs != 4 {
		t.Fatalf("a dry run deleted parked entries: %d left", st.Msgs)
	}

	out := x.run(ctx, nil, "purge", "--parked", "--class", "SERVER", "--yes").must(t, ExitOK, "purge --parked")
	contains(t, out.stdout, "purged 4 entries")
	if st := x.streamState(x.cfg.Replay.ParkedStream); st.Msgs != 0 {
		t.Fatalf("after purge --parked: %d parked entries left, want 0", st.Msgs)
	}
	if n := len(x.dlqIDs()); n != 3 {
		t.Fatalf("purge --parked changed the DLQ: %d entries, want 3", n)
	}
}

// purge --parked before anything was parked (no parked stream) purges
// nothing, says so and succeeds; it does not create the stream.
func TestPurgeParkedWithoutAParkedStream(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("dlq", 2, "SERVER", 0)
	out := x.run(ctx, nil, "purge", "--parked", "--all", "--yes").must(t, ExitOK, "purge --parked without a stream")
	contains(t, out.stdout, "purged 0 entries")
	contains(t, out.stderr, "nothing is parked")
	if _, err := x.js.Stream(ctx, x.cfg.Replay.ParkedStream); err == nil {
		t.Fatal("purge --parked created the parked stream")
	}
	if n := len(x.dlqIDs()); n != 2 {
		t.Fatalf("purge --parked changed the DLQ: %d entries, want 2", n)
	}
}
