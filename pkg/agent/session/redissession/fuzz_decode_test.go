package redissession

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// FuzzDecodeInvocation: an invocation hash read back from Redis (written
// by another version, by hand, or damaged) never panics the decoders
// (decodeInvocation, and decodeFlat on a script's HGETALL reply of any
// shape); a field that does not parse is an error. A record as the
// transition script writes it decodes to itself.
func FuzzDecodeInvocation(f *testing.F) {
	f.Add("inv-1", "completed", `{"app":"a","user_id":"u","session_id":"s"}`, `{"result":{"v":1}}`, "", "2", int64(1764400000123456789), int64(1764400001000000000), true)
	f.Add("inv-1", "running", "", "", "boom", "1", int64(0), int64(0), false)
	f.Add("", "weird", `{"app":1}`, "not json", "", "x", int64(-62135596800000000), int64(253402300799999999), true)
	f.Add("i", "failed", `null`, `null`, "e\nf", "-0", int64(1), int64(2), true)
	f.Add("i", "dead_lettered", `{}`, `[]`, "", "99999999999999999999", int64(1), int64(2), false)
	f.Fuzz(func(t *testing.T, id, status, sess, result, errText, attempts string, created, finished int64, done bool) {
		// Any field values: never a panic; a record or an error.
		raw := map[string]string{
			"id": id, "status": status, "session": sess, "result": result, "error": errText, "attempts": attempts,
			"created_at": errText, "updated_at": attempts, "finished_at": result,
		}
		if rec, err := decodeInvocation(raw); (rec == nil) == (err == nil) {
			t.Fatalf("decodeInvocation = %+v, %v", rec, err)
		}
		flat := []any{"id", id, "status", status, 7, "x", "session", sess, nil, "attempts", attempts, "result"}
		if rec, err := decodeFlat(flat); (rec == nil) == (err == nil) {
			t.Fatalf("decodeFlat = %+v, %v", rec, err)
		}

		// A record as luaTransition stores it.
		toTime := func(n int64) time.Time {
			const lo, hi = -62135596800, 253402300799 // years 1 to 9999
			s := lo + (n/1e9%(hi-lo)+(hi-lo))%(hi-lo)
			return time.Unix(s, (n%1e9+1e9)%1e9).UTC()
		}
		var key session.Key
		if json.Unmarshal([]byte(sess), &key) != nil {
			key = session.Key{}
		}
		want := &session.Invocation{
			ID: strings.ToValidUTF8(id, "\uFFFD"), Status: session.InvocationStatus(status), Session: key,
			Error: errText, CreatedAt: toTime(created), UpdatedAt: toTime(finished),
		}
		if n, err := strconv.Atoi(attempts); err == nil {
			want.Attempts = n
		}
		if done {
			want.FinishedAt = want.UpdatedAt
		}
		if json.Valid([]byte(result)) {
			var buf bytes.Buffer
			_ = json.Compact(&buf, []byte(result))
			want.Result = buf.Bytes()
		}
		sk, err := json.Marshal(want.Session)
		if err != nil {
			t.Fatal(err)
		}
		stored := map[string]string{
			"id": want.ID, "status": string(want.Status), "session": string(sk), "result": string(want.Result),
			"error": want.Error, "attempts": strconv.Itoa(want.Attempts),
			"created_at": want.CreatedAt.Format(time.RFC3339Nano), "updated_at": want.UpdatedAt.Format(time.RFC3339Nano),
		}
		if done {
			stored["finished_at"] = want.FinishedAt.Format(time.RFC3339Nano)
		}
		got, err := decodeInvocation(stored)
		if err != nil {
			t.Fatalf("a stored record does not decode: %v\n%v", err, stored)
		}
		if got.ID != want.ID || got.Status != want.Status || got.Session != want.Session || got.Error != want.Error ||
			got.Attempts != want.Attempts || !bytes.Equal(got.Result, want.Result) || (len(got.Result) == 0) != (got.Result == nil) ||
			!got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) || !got.FinishedAt.Equal(want.FinishedAt) {
			t.Fatalf("stored record decoded differently:\n got %+v\nwant %+v", got, want)
		}
	})
}

// FuzzDecodeSession: session events and state values read back from Redis
// never panic decodeSession; it returns an error or every event and state
// key, and what it returns encodes to bytes that decode and encode to the
// same bytes again.
func FuzzDecodeSession(f *testing.F) {
	ev := `{"id":"e1","invocation_id":"inv-1","author":"support","content":{"role":"model","parts":[{"function_call":{"id":"c1","name":"get_order","args":{"order_id":"A-1"}}}]},"usage":{"prompt_tokens":3},"actions":{"state_delta":{"k":null}},"timestamp":"2025-01-01T00:00:00.123+01:00"}`
	f.Add(ev+"\x00"+`{"author":"user","content":{"parts":[null,{"text":"hi"}]},"turn_complete":true}`, "k\x00[1,{\"a\":null}]\x00j\x001e400")
	f.Add(`null`+"\x00"+`{}`, "x\x00null")
	f.Add(`{"timestamp":"yesterday"}`, "")
	f.Add(`{"content":{"parts":[{"function_response":{"name":"f","response":{"status":"error","n":1.0e2}}}]},"finish_reason":"MALFORMED_FUNCTION_CALL","error_code":7}`, "k\x00\"\\ud800\"")
	f.Add(`{"actions":{},"timestamp":"0001-01-01T00:00:00Z"}`, "")
	f.Fuzz(func(t *testing.T, events, state string) {
		var list []string
		if events != "" {
			list = strings.Split(events, "\x00")
		}
		st := map[string]string{}
		kv := strings.Split(state, "\x00")
		for i := 0; i+1 < len(kv); i += 2 {
			st[kv[i]] = kv[i+1]
		}
		key := session.Key{App: "a", UserID: "u", SessionID: "s"}
		s, err := decodeSession(key, list, st)
		if err != nil {
			if s != nil {
				t.Fatalf("session and error: %v", err)
			}
			return
		}
		if len(s.Events) != len(list) || len(s.State) != len(st) || s.Key != key {
			t.Fatalf("decoded %d events and %d state keys from %d and %d", len(s.Events), len(s.State), len(list), len(st))
		}
		encode := func(s *session.Session) ([]string, map[string]string) {
			var evs []string
			for _, e := range s.Events {
				b, err := json.Marshal(e)
				if err != nil {
					t.Fatalf("encode a decoded event: %v", err)
				}
				evs = append(evs, string(b))
			}
			out := map[string]string{}
			for k, v := range s.State {
				b, err := json.Marshal(v)
				if err != nil {
					t.Fatalf("encode a decoded state value: %v", err)
				}
				out[k] = string(b)
			}
			return evs, out
		}
		evs1, st1 := encode(s)
		s2, err := decodeSession(key, evs1, st1)
		if err != nil {
			t.Fatalf("re-encoded session does not decode: %v", err)
		}
		evs2, st2 := encode(s2)
		if strings.Join(evs1, "\n") != strings.Join(evs2, "\n") || len(st1) != len(st2) {
			t.Fatalf("encoding not stable:\n%q\n%q", evs1, evs2)
		}
		for k, v := range st1 {
			if st2[k] != v {
				t.Fatalf("state %q: %s then %s", k, v, st2[k])
			}
		}
	})
}
