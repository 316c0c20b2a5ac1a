package producercli_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/producercli"
)

// Regression (found in review, twentieth session): a batch file saved by a
// Windows tool as "UTF-8 with BOM" (Notepad before 2019, PowerShell 5's
// Out-File -Encoding utf8, Excel's "CSV UTF-8" family) starts with EF BB BF.
// ParseBatch trimmed white space only, so the BOM stayed in front of line
// 1's '{' and the first request was refused as "not a JSON request object:
// invalid character 'ï' looking for beginning of value": the first request
// of the file never ran, on every rerun, with an error that names a
// character the user cannot see in the editor; and a first-line "# comment"
// was not skipped. Correct: a leading BOM is dropped and line 1 is the same
// request as without it (same derived id, so a file re-saved with or
// without BOM reruns nothing).
func TestParseBatchSkipsALeadingUTF8BOM(t *testing.T) {
	body := `{"agent":"support","user_id":"u1","session_id":"s1","text":"refund A-1042"}` + "\r\n" +
		`{"agent":"support","user_id":"u2","session_id":"s2","text":"where is my order"}` + "\r\n"
	plain, err := producercli.ParseBatch(strings.NewReader(body))
	if err != nil || len(plain) != 2 || plain[0].Err != nil || plain[1].Err != nil || !plain[0].DerivedID {
		t.Fatalf("test premise: without BOM %+v %v", plain, err)
	}
	for name, file := range map[string]string{
		"request on line 1": "\xef\xbb\xbf" + body,
		"comment on line 1": "\xef\xbb\xbf# exported from the ticket system\r\n" + body,
	} {
		withBOM, err := producercli.ParseBatch(strings.NewReader(file))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(withBOM) != 2 {
			t.Fatalf("%s: %d lines, want 2 (a first-line comment after the BOM is skipped): %+v", name, len(withBOM), withBOM)
		}
		for i, l := range withBOM {
			if l.Err != nil || l.Request.InvocationID != plain[i].Request.InvocationID {
				t.Fatalf("%s: line %d of a file with a UTF-8 BOM: err %v; want the same request as without the BOM (id %s)",
					name, l.No, l.Err, plain[i].Request.InvocationID)
			}
		}
	}
}
