package idempotency_test

import (
	"testing"
	"time"
)

// Regression (found in review of this session's fix, twenty-third session):
// after cancelling a tool whose renewals failed, the renewer renewed again
// only at its next RenewInterval tick, which lands at or after the lease's
// end, so a store back before that end did not keep the claim and a second
// owner ran the effect while the cancelled tool wound down. The cancel
// comes a margin (a tenth of the lease, at most 2 s) before the lease ends;
// with the shipped RenewInterval (lease/3) the tick lands at the lease end
// itself, with any longer valid interval (here 2.4 s of a 3 s lease, which
// Options.Validate accepts) well after it. The store is back 300 ms before
// the lease ends, so the renewal made at the cancel, or its retry on a
// short backoff, must keep the key this owner's.
func TestRenewalAfterCancelComesBeforeTheLeaseEnds(t *testing.T) {
	windDownAfterCancel(t, "inv-wind-late", 2400*time.Millisecond,
		"the store was back 300ms before the first owner's lease ended, but the renewer waited for its next RenewInterval tick (after the lease end) to renew, and the second owner claimed the key while the first tool was still winding down")
}
