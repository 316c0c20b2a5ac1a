package producercli_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, seventeenth session): A batch file exported in Latin-1 / Windows-1252 (a common spreadsheet
// export) has bytes that are not UTF-8. The worker refuses such a request
// (envelope.DecodeRequest: "encoding/json would read the bad bytes as U+FFFD
// and run another text than was sent"), and Request.Validate refuses ids
// that are not UTF-8 because "two distinct users became one session". But
// ParseBatch decodes the line with encoding/json first, which has already
// replaced every bad byte with U+FFFD, so the checks never see them: the
// text is silently changed, and two different lines collapse into one.
func TestParseBatchRefusesLinesThatAreNotUTF8(t *testing.T) {
	// Two different requests: "café" and "cafè" in Latin-1 (0xE9, 0xE8).
	file := "{\"agent\":\"support\",\"user_id\":\"u1\",\"session_id\":\"s1\",\"text\":\"refund caf\xe9 order\"}\n" +
		"{\"agent\":\"support\",\"user_id\":\"u1\",\"session_id\":\"s1\",\"text\":\"refund caf\xe8 order\"}\n" +
		// Two different users: José and Josè.
		"{\"invocation_id\":\"u-a\",\"agent\":\"support\",\"user_id\":\"Jos\xe9\",\"session_id\":\"s2\",\"text\":\"hi\"}\n" +
		"{\"invocation_id\":\"u-b\",\"agent\":\"support\",\"user_id\":\"Jos\xe8\",\"session_id\":\"s2\",\"text\":\"hi\"}\n"
	lines, err := producercli.ParseBatch(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4", len(lines))
	}
	for _, l := range lines {
		var ie *envelope.InvalidError
		if !errors.As(l.Err, &ie) {
			got := ""
			if l.Request != nil {
				got = l.Request.InvocationID + " user " + l.Request.UserID + " text " + l.Request.Message.Text()
			}
			t.Errorf("line %d (not UTF-8) accepted as %q; want an invalid line, as the worker refuses non-UTF-8 requests", l.No, got)
		}
	}
	if lines[0].Request != nil && lines[1].Request != nil && lines[0].Request.InvocationID == lines[1].Request.InvocationID {
		t.Errorf("two different lines (caf\\xe9 / caf\\xe8) got the same derived invocation id %s: the second would be skipped as a duplicate and never run",
			lines[0].Request.InvocationID)
	}
}
