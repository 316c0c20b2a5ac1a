package envelope_test

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// BenchmarkDecodeRequest decodes a typical request (one text part, a
// little metadata): the worker does this once per message.
func BenchmarkDecodeRequest(b *testing.B) {
	data := []byte(`{"v":1,"invocation_id":"inv-1","agent":"support","user_id":"u1","session_id":"s1","message":{"role":"user","parts":[{"text":"refund A-1042, please"}]},"metadata":{"channel":"web","priority":"high"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := envelope.DecodeRequest(data, 0); err != nil {
			b.Fatal(err)
		}
	}
}
