package replayer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// A request too large for its DLQ entry is kept as a prefix cut to fit the
// max payload (dlq.Publisher). Parking that entry (by hand, as the runbook's
// step 7 says for entries that need a longer look, or at max_replays) must
// work: the parked copy adds a History item (a second copy of the reason)
// and three parked headers to an entry the Publisher already filled up to
// the limit less its 1 KiB header reserve. (It failed with "maximum payload
// exceeded" before Park cut the copy to fit.)
func TestParkATruncatedEntry(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	big := bytes.Repeat([]byte{0xff, 'x'}, int(x.nc.MaxPayload())) // not JSON, larger than the payload limit
	e := &dlq.Entry{InvocationID: strings.Repeat("i", 128), Agent: "support", Class: "UNKNOWN",
		Reason:        strings.Repeat("応答", 100), // a provider's message in Japanese: 200 runes (the sanitiser's cap), 600 bytes
		DeliveryCount: 1, Worker: "worker-" + strings.Repeat("w", 40) + "-12345", Model: "sim:support"}
	e.SetRequest(big)
	if _, err := x.pub.Publish(ctx, e); err != nil {
		t.Fatal(err)
	}
	if !e.RequestTruncated {
		t.Fatal("the entry was not cut to the max payload")
	}
	out := x.run(ctx, nil, "park", "--class", "UNKNOWN", "--yes")
	if out.code != ExitOK {
		t.Fatalf("park of a truncated entry: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", out.code, ExitOK, out.stdout, out.stderr)
	}
	if left := x.dlqIDs(); len(left) != 0 {
		t.Fatalf("left in the DLQ: %v", left)
	}
	// The parked copy is cut further, keeping the digest of the whole
	// request the DLQ entry had.
	s, err := x.js.Stream(ctx, x.cfg.Replay.ParkedStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	parked, err := dlq.DecodeEntry(m.Data)
	if err != nil {
		t.Fatal(err)
	}
	if !parked.RequestTruncated || parked.RequestSHA256 != e.RequestSHA256 || parked.RequestSize != e.RequestSize ||
		len(parked.RequestRaw) >= len(e.RequestRaw) || len(parked.History) != 1 {
		t.Fatalf("parked copy: truncated %v, sha %s (DLQ entry's %s), size %d (%d), %d request bytes (DLQ entry's %d), %d history items",
			parked.RequestTruncated, parked.RequestSHA256, e.RequestSHA256, parked.RequestSize, e.RequestSize,
			len(parked.RequestRaw), len(e.RequestRaw), len(parked.History))
	}
}
