package envelope_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/agentfleet/agentfleet/internal/fuzztest"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// FuzzRequestRoundTrip: a request the worker accepts, encoded again (as
// the client and the replayer do), is accepted again and decodes to the
// same request; encoding it is stable from then on.
func FuzzRequestRoundTrip(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte(`{"v":1,"invocation_id":"a","agent":"b","user_id":"c","session_id":"d","message":{"parts":[{"text":"<&>\u2028"},{}]},"metadata":{}}`))
	f.Add([]byte(`{"v":1,"invocation_id":"a","agent":"b","user_id":"\ud800","session_id":"d","message":{"role":"user","parts":[{"text":"x"}]},"metadata":{"k":"\u00e9","":""}}`))
	fuzztest.AddByteCorpus(f, "FuzzDecodeRequest")
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := envelope.DecodeRequest(data, 8192)
		if err != nil {
			return
		}
		b1, err := r.Encode()
		if err != nil {
			t.Fatalf("encode an accepted request: %v", err)
		}
		r2, err := envelope.DecodeRequest(b1, len(b1))
		if err != nil {
			t.Fatalf("re-encoded request rejected: %v\n%s", err, b1)
		}
		if len(r.Metadata) == 0 {
			r.Metadata = nil // omitempty: {} and absent are the same request
		}
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip changed the request:\n%+v\n%+v", r, r2)
		}
		b2, err := r2.Encode()
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("encoding not stable (%v):\n%s\n%s", err, b1, b2)
		}
	})
}

// FuzzDecodeResult: a result body read from NATS (the client's Await)
// never panics the decoder; an accepted result has the version and a known
// status, and encodes to bytes that decode to the same result and encode
// to the same bytes again (the worker compares published results by their
// bytes).
func FuzzDecodeResult(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"invocation_id":"inv-1","status":"completed","content":"Refunded <b>12.99</b> & done","model_calls":3,"attempts":1,"tools_run":["get_order","refund_order"],"duration_ms":812}`,
		`{"v":1,"invocation_id":"inv-1","status":"dead_lettered","error_class":"SERVER","user_message":"queued","tools_run":[]}`,
		`{"v":1,"status":"failed","content":"\ud800\u2028","truncated":true,"model_calls":-1,"duration_ms":9223372036854775807}`,
		`{"v":1,"status":"weird"}`, `{"v":2,"status":"completed"}`, `null`, `[]`, `{"v":1.5}`,
		`{"v":1,"status":"completed","tools_run":null,"future":{"a":[1]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := envelope.DecodeResult(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		switch r.Status {
		case envelope.StatusCompleted, envelope.StatusFailed, envelope.StatusDeadLettered:
		default:
			t.Fatalf("accepted status %q", r.Status)
		}
		if r.V != envelope.Version {
			t.Fatalf("accepted version %d", r.V)
		}
		b1, err := r.Encode()
		if err != nil {
			t.Fatalf("encode an accepted result: %v", err)
		}
		r2, err := envelope.DecodeResult(b1)
		if err != nil {
			t.Fatalf("re-encoded result rejected: %v\n%s", err, b1)
		}
		if len(r.ToolsRun) == 0 {
			r.ToolsRun = nil
		}
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip changed the result:\n%+v\n%+v", r, r2)
		}
		b2, err := r2.Encode()
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("encoding not stable (%v):\n%s\n%s", err, b1, b2)
		}
	})
}
