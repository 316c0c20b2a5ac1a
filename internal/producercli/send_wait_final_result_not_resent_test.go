package producercli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/producercli"
)

// Regression (found in review, twenty-fourth session): `producer send
// --invocation ID --wait` run again for a request that had completed looked
// its result up, found it, and published the request again all the same
// (as client.SubmitAndAwait did): after the requests stream's duplicate
// window every such rerun queued a copy for the fleet, which a worker had
// to take, lock the session for and answer from the invocation's record.
// The stored result is printed now and nothing is sent (a real worker;
// the requests stream's last sequence tells whether anything was sent).
func TestSendWaitOfACompletedInvocationDoesNotSendItAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := parcelFleet(t, ctx)
	send := func() (int, string, string) { return sendWait(ctx, f, "ticket-12", "Where is my parcel?") }
	lastSeq := func() uint64 {
		s, err := f.js.Stream(ctx, f.sc.RequestsStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}
	if code, out, errs := send(); code != producercli.ExitOK || !strings.Contains(out, "parcel left") {
		t.Fatalf("test premise: first send exit %d (stdout %q, stderr %q)", code, out, errs)
	}
	before := lastSeq()
	outliveDuplicateWindow(f.sc) // the rerun comes the next morning

	code, out, errs := send()
	if code != producercli.ExitOK || !strings.Contains(out, "parcel left") {
		t.Fatalf("send --wait again: exit %d (stdout %q, stderr %q); want exit 0 and the stored answer", code, out, errs)
	}
	if after := lastSeq(); after != before {
		t.Fatalf("send --wait of an invocation whose completed result it had just looked up sent the request again "+
			"(requests stream last sequence %d -> %d; stderr %q)", before, after, errs)
	}
	if !strings.Contains(errs, "not sent again") {
		t.Fatalf("send --wait again: stderr %q; want it to say the request was not sent again", errs)
	}
}
