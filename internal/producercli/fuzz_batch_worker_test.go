package producercli_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// FuzzBatchLineReachesWorker: a batch line the producer accepts is a
// request the worker accepts too (DecodeRequest of what the producer
// publishes gives the same request), and a derived invocation id depends
// on the request only, not on how the line was written: the request
// written again without its id, on a line of its own, derives the same id.
func FuzzBatchLineReachesWorker(f *testing.F) {
	f.Add([]byte(`{"agent":"support","user_id":"u","session_id":"s","text":"hi"}`))
	f.Add([]byte(`{"text":"a <b> & c","session_id":"s","user_id":"u","agent":"support","metadata":{"z":"1","a":"2"}}`))
	f.Add([]byte(`{"v":1,"invocation_id":"inv-1","agent":"support","user_id":"u","session_id":"s","message":{"role":"user","parts":[{"text":"x"}]}}`))
	f.Add([]byte(`{"agent":"support","user_id":"u","session_id":"s","text":"hi","message":{"parts":[{"text":""},{"text":"\u2028"}]}}`))
	f.Add([]byte(`{"agent":"support","user_id":"\ud800","session_id":"s","text":"x","metadata":{}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if strings.ContainsAny(string(line), "\r\n") {
			return // one line
		}
		lines, err := producercli.ParseBatch(strings.NewReader(string(line)))
		if err != nil || len(lines) != 1 || lines[0].Err != nil {
			return
		}
		req := lines[0].Request
		b, err := req.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := envelope.DecodeRequest(b, 0)
		if err != nil {
			t.Fatalf("the worker refuses what the producer accepted: %v\n%s", err, b)
		}
		want := *req
		if len(want.Metadata) == 0 {
			want.Metadata = nil
		}
		if !reflect.DeepEqual(got, &want) {
			t.Fatalf("the worker reads another request:\n%+v\n%+v", got, &want)
		}
		if !lines[0].DerivedID {
			return
		}
		again := want
		again.InvocationID = ""
		b2, err := again.Encode()
		if err != nil {
			t.Fatal(err)
		}
		l2, err := producercli.ParseBatch(strings.NewReader(string(b2) + "\n"))
		if err != nil || len(l2) != 1 || l2[0].Err != nil {
			t.Fatalf("the request written again is refused: %v %+v\n%s", err, l2, b2)
		}
		if l2[0].Request.InvocationID != req.InvocationID {
			t.Fatalf("derived id %s from %s, %s from %s", req.InvocationID, line, l2[0].Request.InvocationID, b2)
		}
	})
}
