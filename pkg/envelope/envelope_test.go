package envelope_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

const good = `{"v":1,"invocation_id":"inv-1","agent":"support","user_id":"u1","session_id":"s1","message":{"role":"user","parts":[{"text":"refund A-1042"}]},"future_field":true}`

func TestDecodeRequest(t *testing.T) {
	r, err := envelope.DecodeRequest([]byte(good), 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.InvocationID != "inv-1" || r.Agent != "support" || r.Message.Text() != "refund A-1042" {
		t.Fatalf("decoded %+v", r)
	}
	bad := map[string]string{
		"not json":       `{{{`,
		"empty":          `  `,
		"array":          `[1,2]`,
		"wrong version":  strings.Replace(good, `"v":1`, `"v":2`, 1),
		"no version":     strings.Replace(good, `"v":1,`, ``, 1),
		"no invocation":  strings.Replace(good, `"invocation_id":"inv-1",`, ``, 1),
		"dotted id":      strings.Replace(good, `"inv-1"`, `"inv.1"`, 1),
		"wildcard agent": strings.Replace(good, `"support"`, `"sup*"`, 1),
		"no user":        strings.Replace(good, `"user_id":"u1",`, ``, 1),
		"no session":     strings.Replace(good, `"session_id":"s1",`, ``, 1),
		"no message":     strings.Replace(good, `"message":{"role":"user","parts":[{"text":"refund A-1042"}]},`, ``, 1),
		"empty text":     strings.Replace(good, `refund A-1042`, ``, 1),
		"model role":     strings.Replace(good, `"role":"user"`, `"role":"model"`, 1),
		"function call":  strings.Replace(good, `{"text":"refund A-1042"}`, `{"function_call":{"name":"refund_order"}}`, 1),
		"string version": strings.Replace(good, `"v":1`, `"v":"1"`, 1),
	}
	for name, in := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := envelope.DecodeRequest([]byte(in), 0)
			var ie *envelope.InvalidError
			if !errors.As(err, &ie) || ie.Reason == "" {
				t.Fatalf("DecodeRequest(%s) = %v, want *InvalidError", name, err)
			}
		})
	}
}

func TestDecodeRequestSizeLimit(t *testing.T) {
	big := strings.Replace(good, "refund A-1042", strings.Repeat("x", 10<<20), 1)
	_, err := envelope.DecodeRequest([]byte(big), 0)
	var ie *envelope.InvalidError
	if !errors.As(err, &ie) || !strings.Contains(ie.Reason, "limit") {
		t.Fatalf("10 MB request: %v", err)
	}
	if _, err := envelope.DecodeRequest([]byte(good), 50); err == nil {
		t.Fatal("custom limit not enforced")
	}
}

func TestResultRoundTrip(t *testing.T) {
	in := &envelope.Result{InvocationID: "inv-1", Status: envelope.StatusDeadLettered, ErrorClass: "SERVER", ModelCalls: 2, ToolsRun: []string{"get_order"}}
	b, err := in.Encode()
	if err != nil {
		t.Fatal(err)
	}
	out, err := envelope.DecodeResult(b)
	if err != nil || out.Status != envelope.StatusDeadLettered || out.ErrorClass != "SERVER" || out.V != 1 || len(out.ToolsRun) != 1 {
		t.Fatalf("round trip = %+v, %v", out, err)
	}
	if _, err := envelope.DecodeResult([]byte(`{"v":1,"status":"weird"}`)); err == nil {
		t.Fatal("unknown status accepted")
	}
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"v":1,"invocation_id":"a","agent":"b","user_id":"c","session_id":"d","message":{"parts":[null]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := envelope.DecodeRequest(data, 4096)
		if err != nil {
			var ie *envelope.InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("error is not *InvalidError: %v", err)
			}
			return
		}
		if !envelope.ValidID(r.InvocationID) || !envelope.ValidID(r.Agent) || r.Message.Text() == "" {
			t.Fatalf("accepted an invalid request: %+v", r)
		}
	})
}

// encoding/json writes each byte of invalid UTF-8 as U+FFFD (three bytes),
// so a producer's user or session id that is not UTF-8 reaches the worker
// as another id: distinct ids ("M\xfcller", "M\xe4ller" in Latin-1) become
// one (one session for two users), and an id within 256 bytes can decode
// to more. Validate, which the client runs before it sends, rejects them.
func TestValidateRejectsIDsThatAreNotUTF8(t *testing.T) {
	for name, mut := range map[string]func(*envelope.Request){
		"latin-1 user":    func(r *envelope.Request) { r.UserID = "M\xfcller" },
		"latin-1 session": func(r *envelope.Request) { r.SessionID = "s-\xe4" },
		"long user":       func(r *envelope.Request) { r.UserID = strings.Repeat("\xfc", 100) },
	} {
		t.Run(name, func(t *testing.T) {
			r, err := envelope.DecodeRequest([]byte(good), 0)
			if err != nil {
				t.Fatal(err)
			}
			mut(r)
			var ie *envelope.InvalidError
			if err := r.Validate(); !errors.As(err, &ie) {
				b, _ := r.Encode()
				_, werr := envelope.DecodeRequest(b, 0)
				t.Fatalf("Validate = %v, want *InvalidError; the worker would read %s (%v)", err, b, werr)
			}
		})
	}
}

// A request whose bytes are not UTF-8 (one Latin-1 "é" in its text) is
// refused with a clear error (found in review, sixteenth session): it used
// to run with U+FFFD in its place, and when it failed transiently its dead
// letter could keep it only base64-encoded, a third larger, so a request
// near the size limit was cut and could never be replayed.
func TestDecodeRequestRefusesInvalidUTF8(t *testing.T) {
	data := []byte(strings.Replace(good, `"text":"`, "\"text\":\"caf\xe9 ", 1))
	if bytes.Equal(data, []byte(good)) {
		t.Fatal("setup: the text part was not found")
	}
	_, err := envelope.DecodeRequest(data, 0)
	var ie *envelope.InvalidError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("DecodeRequest = %v, want an *InvalidError naming UTF-8", err)
	}
}
