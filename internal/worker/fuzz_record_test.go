package worker

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// FuzzPeekIDs: the ids read from a request that failed validation (to
// answer its producer and name its DLQ entry) are empty or valid ids, and
// for a request that passes validation they are its own.
func FuzzPeekIDs(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"invocation_id":"inv-1","agent":"support","user_id":"u","session_id":"s","message":{"role":"user","parts":[{"text":"hi"}]}}`,
		`{"invocation_id":"inv.1","agent":"sup port"}`, `{"INVOCATION_ID":"a","Agent":"b","agent":"c"}`,
		`{"invocation_id":1}`, `{"invocation_id":"ok","agent":"ok"`, `null`, `"x"`, "\ufeff{}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		id, agentName := peekIDs(data)
		if id != "" && !envelope.ValidID(id) || agentName != "" && !envelope.ValidID(agentName) {
			t.Fatalf("peekIDs(%q) = %q, %q: not valid ids", data, id, agentName)
		}
		if r, err := envelope.DecodeRequest(data, 0); err == nil && (r.InvocationID != id || r.Agent != agentName) {
			t.Fatalf("peekIDs(%q) = %q, %q; the request says %q, %q", data, id, agentName, r.InvocationID, r.Agent)
		}
	})
}

// FuzzDecodeRecord: an invocation record's result field read back from the
// store (another version's, or damaged) never panics DecodeRecord; what it
// decodes keeps its bases through the running record the worker writes,
// and its result, fitted as publishResult fits it, encodes within the
// limit or is refused.
func FuzzDecodeRecord(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `{"replay_count":2,"attempts_base":3,"budget_base":1}`, `{"attempts_base":4,"in_progress_given_back":2}`,
		`{"result":{"v":1,"invocation_id":"inv-1","status":"completed","content":"done","tools_run":["a"]},"replay_count":0,"class":""}`,
		`{"result":null,"replay_count":-1}`, `{"result":{"content":"` + strings.Repeat("<&>", 400) + `"}}`,
		`{"replay_count":1e3}`, `[1]`, `{"result":"x"}`,
	} {
		f.Add([]byte(s), 600)
	}
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		r, err := DecodeRecord(&session.Invocation{ID: "inv-1", Result: data})
		if err != nil {
			if r != nil {
				t.Fatalf("record and error: %+v, %v", r, err)
			}
			return
		}
		if r == nil {
			t.Fatal("nil record without an error")
		}
		back, err := DecodeRecord(&session.Invocation{Result: runningRecord(r.ReplayCount, r.AttemptsBase, r.BudgetBase, r.InProgressGivenBack)})
		if err != nil || back.ReplayCount != r.ReplayCount || back.AttemptsBase != r.AttemptsBase || back.BudgetBase != r.BudgetBase ||
			back.InProgressGivenBack != r.InProgressGivenBack {
			t.Fatalf("running record round trip: %+v -> %+v (%v)", r, back, err)
		}
		if r.Result == nil {
			return
		}
		limit %= 1 << 16
		if err := fitResult(r.Result, limit); err != nil {
			return
		}
		b, err := r.Result.Encode()
		if err != nil {
			t.Fatalf("encode a fitted result: %v", err)
		}
		if limit > 0 && len(b) > limit {
			t.Fatalf("fitted result is %d bytes, limit %d", len(b), limit)
		}
	})
}

// FuzzFitResult: whatever the model's text and the other fields hold,
// fitResult leaves a result that encodes within the limit (or says it
// cannot), keeps a valid-UTF-8 prefix of the text that is as long as fits,
// marks a cut as truncated, is a no-op on its own output, and maxEncoded is
// an upper bound of the encoded size.
func FuzzFitResult(f *testing.F) {
	f.Add("Refunded 1091 cents.", "", "", "get_order,refund_order", int64(3), false, 1000)
	f.Add(strings.Repeat("<b>&</b>", 300), "Temporary problem", "SERVER", "", int64(-1), false, 700)
	f.Add(strings.Repeat("é€😀", 300), "", "", "", int64(1<<62), true, 333)
	f.Add("\xff\xfe\xed\xa0\x80 \u2028\u2029", "\x00", "\xc3", ",,,", int64(0), false, 200)
	f.Add(strings.Repeat("x", 5000), "", "", "", int64(0), false, 0)
	f.Add("abc", strings.Repeat("<", 200), "", "", int64(0), false, 100)
	f.Fuzz(func(t *testing.T, content, userMsg, class, tools string, n int64, truncated bool, limit int) {
		limit %= 1 << 16
		mk := func() *envelope.Result {
			r := &envelope.Result{V: envelope.Version, InvocationID: "inv-1", Status: envelope.StatusCompleted,
				Content: content, UserMessage: userMsg, ErrorClass: class, Truncated: truncated,
				ModelCalls: int(n), Attempts: int(n >> 1), DurationMS: n}
			if tools != "" {
				r.ToolsRun = strings.Split(tools, ",")
			}
			return r
		}
		if b, _ := mk().Encode(); len(b) > maxEncoded(mk()) {
			t.Fatalf("encoded %d bytes, above maxEncoded %d", len(b), maxEncoded(mk()))
		}
		res := mk()
		err := fitResult(res, limit)
		if err != nil {
			empty := mk()
			empty.Content, empty.UserMessage, empty.Truncated = "", "", true
			if b, _ := empty.Encode(); limit <= 0 || len(b) <= limit {
				t.Fatalf("fitResult(limit %d) failed though the result without content and message fits (%d bytes): %v", limit, len(b), err)
			}
			return
		}
		b, encErr := res.Encode()
		if encErr != nil {
			t.Fatal(encErr)
		}
		if limit <= 0 {
			if res.Content != strings.ToValidUTF8(content, "\uFFFD") || res.Truncated != truncated {
				t.Fatal("limit <= 0 changed the result")
			}
			return
		}
		if len(b) > limit {
			t.Fatalf("encoded %d bytes, limit %d", len(b), limit)
		}
		full := strings.ToValidUTF8(content, "\uFFFD")
		if !utf8.ValidString(res.Content) || !strings.HasPrefix(full, res.Content) {
			t.Fatalf("kept %q: not a valid prefix of %q", res.Content, full)
		}
		fullMsg := strings.ToValidUTF8(userMsg, "\uFFFD")
		if !utf8.ValidString(res.UserMessage) || !strings.HasPrefix(fullMsg, res.UserMessage) {
			t.Fatalf("kept message %q: not a valid prefix of %q", res.UserMessage, fullMsg)
		}
		msgCut := res.UserMessage != fullMsg
		if msgCut && (res.Content != "" || !res.Truncated) {
			t.Fatalf("message cut with content %q kept, truncated %v: the content goes first", res.Content, res.Truncated)
		}
		cut := res.Content != full
		if cut && !res.Truncated || !cut && res.Truncated != truncated {
			t.Fatalf("cut %v, truncated %v (was %v)", cut, res.Truncated, truncated)
		}
		if msgCut {
			_, size := utf8.DecodeRuneInString(fullMsg[len(res.UserMessage):])
			longer := *res
			longer.UserMessage = fullMsg[:len(res.UserMessage)+size]
			if lb, _ := longer.Encode(); len(lb) <= limit {
				t.Fatalf("message cut to %d bytes though %d fit (%d <= %d)", len(res.UserMessage), len(longer.UserMessage), len(lb), limit)
			}
		}
		if cut && !msgCut {
			_, size := utf8.DecodeRuneInString(full[len(res.Content):])
			longer := *res
			longer.Content = full[:len(res.Content)+size]
			if lb, _ := longer.Encode(); len(lb) <= limit {
				t.Fatalf("cut to %d bytes of text though %d fit (%d <= %d)", len(res.Content), len(longer.Content), len(lb), limit)
			}
		}
		again := *res
		if err := fitResult(&again, limit); err != nil || again.Content != res.Content || again.UserMessage != res.UserMessage || again.Truncated != res.Truncated {
			t.Fatalf("a second fit changed the result (%v)", err)
		}
		var back envelope.Result
		if err := json.Unmarshal(b, &back); err != nil || back.Content != res.Content {
			t.Fatalf("fitted result does not decode to its content: %v", err)
		}
	})
}
