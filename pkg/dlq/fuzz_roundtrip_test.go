package dlq_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentfleet/agentfleet/internal/fuzztest"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// FuzzEntryRoundTrip: an entry read from the DLQ stream that decodes,
// written again (the replayer parks and republishes entries), decodes to
// an entry that encodes to the same bytes, keeps its original request (the
// same JSON value, or the same raw bytes) and its routing fields.
func FuzzEntryRoundTrip(f *testing.F) {
	good, _ := sampleEntry().Encode()
	f.Add(good)
	raw := sampleEntry()
	raw.SetRequest([]byte("\xff{not json"))
	b, _ := raw.Encode()
	f.Add(b)
	f.Add([]byte(`{"v":1,"invocation_id":"a","agent":"b","class":"X","failed_at":"2025-01-01T00:00:00+01:00","first_failed_at":"2025-01-01T00:00:00.5+02:00","request":{"a" : [1, 2.0, "<\u2028>"]},"history":[{}],"tools_completed":null}`))
	f.Add([]byte(`{"v":1,"invocation_id":"a","agent":"b","class":"X","failed_at":"9999-12-31T23:59:59.999999999Z","first_failed_at":"0001-01-01T00:00:00.000000001Z","request":null,"request_truncated":true,"request_sha256":"x","request_raw":"AA=="}`))
	fuzztest.AddByteCorpus(f, "FuzzDecodeEntry")
	f.Fuzz(func(t *testing.T, data []byte) {
		e1, err := dlq.DecodeEntry(data)
		if err != nil {
			return
		}
		orig := bytes.Clone(e1.OriginalRequest())
		wasRaw := len(e1.Request) == 0
		b1, err := e1.Encode()
		if err != nil {
			t.Fatalf("encode a decoded entry: %v", err)
		}
		e2, err := dlq.DecodeEntry(b1)
		if err != nil {
			t.Fatalf("re-encoded entry rejected: %v\n%s", err, b1)
		}
		b2, err := e2.Encode()
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("encoding not stable (%v):\n%s\n%s", err, b1, b2)
		}
		if e2.InvocationID != e1.InvocationID || e2.Agent != e1.Agent || e2.Class != e1.Class ||
			e2.ReplayCount != e1.ReplayCount || !e2.FailedAt.Equal(e1.FailedAt) || !e2.FirstFailedAt.Equal(e1.FirstFailedAt) ||
			e2.RequestTruncated != e1.RequestTruncated || e2.RequestSize != e1.RequestSize || len(e2.History) != len(e1.History) {
			t.Fatalf("round trip changed the entry:\n%+v\n%+v", e1, e2)
		}
		got := e2.OriginalRequest()
		if wasRaw {
			if !bytes.Equal(got, orig) {
				t.Fatalf("raw request changed: %q -> %q", orig, got)
			}
			return
		}
		var c1, c2 bytes.Buffer
		if err := json.Compact(&c1, orig); err != nil {
			t.Fatalf("stored request is not JSON: %v", err)
		}
		if err := json.Compact(&c2, got); err != nil || !bytes.Equal(c1.Bytes(), c2.Bytes()) {
			t.Fatalf("request changed (%v): %s -> %s", err, orig, got)
		}
	})
}
