package worker

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// FuzzReplayHeaders: whatever a request's Agent-Replay-Count and
// Agent-First-Failed-At headers hold (the replayer's, a producer's, damaged
// ones), replayHeaders never panics; the replay count is a first run (0) or
// a count the replayer can add one to; a count and a time written as the
// replayer writes them (internal/replayer.ReplayMsg) read back as
// themselves; and a first failure time it accepts goes into a DLQ entry that
// decodes to the same instant and, written again by the replayer for the next
// replay, reads back as the same instant.
func FuzzReplayHeaders(f *testing.F) {
	for _, s := range []struct{ replay, first string }{
		{"", ""}, {"1", "2025-03-01T10:00:00.123456789Z"}, {"2", "2025-03-01T10:00:00+02:00"},
		{"-3", "2025-03-01T10:00:00.5-07:30"}, {"+2", "not a time"}, {" 2", "2025-03-01"},
		{"0x10", "0001-01-01T00:00:00Z"}, {"007", "9999-12-31T23:59:59.999999999Z"},
		{"2147483647", "9999-12-31T23:59:59-01:00"}, {"2147483648", "0000-01-01T00:00:00Z"},
		{"9223372036854775807", "0000-01-01T00:00:00+01:00"}, {"99999999999999999999", "0001-01-01T00:30:00+01:00"},
		{"-9223372036854775808", "2025-13-01T00:00:00Z"}, {"1e3", "2025-03-01T24:00:00Z"},
	} {
		f.Add(s.replay, s.first, int64(1740823200123456789))
	}
	f.Add("3", "", int64(math.MinInt64))
	f.Add("3", "", int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, replayHdr, firstHdr string, nanos int64) {
		h := nats.Header{}
		h.Set(envelope.HeaderReplayCount, replayHdr)
		h.Set(HeaderFirstFailedAt, firstHdr)
		replay, first := replayHeaders(h)
		if replay < 0 || replay == math.MaxInt {
			t.Fatalf("replay count %q read as %d", replayHdr, replay)
		}
		if n, err := strconv.Atoi(replayHdr); err == nil && n >= 0 && n <= math.MaxInt32 && strconv.Itoa(n) == replayHdr && replay != n {
			t.Fatalf("replay count %q read as %d", replayHdr, replay)
		}
		if !first.IsZero() {
			e := &dlq.Entry{V: dlq.Version, InvocationID: "inv-1", Agent: "support", Class: "SERVER",
				FirstFailedAt: first, FailedAt: first, ReplayCount: replay}
			b, err := e.Encode()
			if err != nil {
				t.Fatalf("first failed at %q (%v): DLQ entry does not encode: %v", firstHdr, first, err)
			}
			back, err := dlq.DecodeEntry(b)
			if err != nil || !back.FirstFailedAt.Equal(first) {
				t.Fatalf("first failed at %q (%v): DLQ entry decodes to %v, %v", firstHdr, first, back, err)
			}
			again := nats.Header{}
			again.Set(HeaderFirstFailedAt, back.FirstFailedAt.UTC().Format(time.RFC3339Nano))
			if _, next := replayHeaders(again); !next.Equal(first) {
				t.Fatalf("first failed at %q (%v): the next replay's header %q reads as %v", firstHdr, first, again.Get(HeaderFirstFailedAt), next)
			}
		}
		// The replayer's header of a time (here any a Unix nanosecond count
		// gives) reads back as that time.
		want := time.Unix(0, nanos).UTC()
		rh := nats.Header{}
		rh.Set(HeaderFirstFailedAt, want.Format(time.RFC3339Nano))
		if _, got := replayHeaders(rh); !got.Equal(want) {
			t.Fatalf("replayer's header %q reads as %v", rh.Get(HeaderFirstFailedAt), got)
		}
	})
}
