package producercli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/producercli"
)

// Regression (found in review of this session's fix, twenty-fourth
// session): `producer send --invocation ID --wait` checked a request with
// Validate alone before looking its id up, so a request too large to send
// whose id had a final stored result printed that result and exited 0,
// where Send (and client.SubmitAndAwait) refuse it. It is refused now as
// Send refuses it (exit 2), whatever is stored.
func TestSendWaitRefusesAnOversizedRequestWhoseIDHasAResult(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := parcelFleet(t, ctx)
	send := func(text string) (int, string, string) { return sendWait(ctx, f, "ticket-13", text) }
	if code, out, errs := send("Where is my parcel?"); code != producercli.ExitOK || !strings.Contains(out, "parcel left") {
		t.Fatalf("test premise: first send exit %d (stdout %q, stderr %q)", code, out, errs)
	}
	code, out, errs := send(strings.Repeat("Where is my parcel? ", 200_000)) // 4 MB: above any limit
	if code != producercli.ExitUsage || strings.Contains(out, "parcel left") {
		t.Fatalf("send --wait of a 4 MB request under an id with a stored result: exit %d (stdout %q, stderr %q); "+
			"want exit %d, refused as Send refuses it, and no stored answer printed", code, out, errs, producercli.ExitUsage)
	}
	if !strings.Contains(errs, "bytes") {
		t.Fatalf("stderr %q; want it to name the size", errs)
	}
}
