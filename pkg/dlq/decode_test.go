package dlq_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

func sampleEntry() *dlq.Entry {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	e := &dlq.Entry{
		InvocationID: "inv-1", Agent: "support", Class: "SERVER", Reason: "model 503 after retries",
		Retryable: true, DeliveryCount: 2, ReplayCount: 0, FirstFailedAt: t0, FailedAt: t0.Add(time.Minute),
		Worker: "w-1", Model: "gemini-x", ToolsCompleted: []string{"get_order"},
	}
	e.SetRequest([]byte(`{"v":1,"invocation_id":"inv-1","agent":"support","user_id":"u","session_id":"s","message":{"role":"user","parts":[{"text":"a <b> & c"}]}}`))
	return e
}

func TestEntryRoundTrip(t *testing.T) {
	in := sampleEntry()
	b, err := in.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"text":"a <b> & c"`) {
		t.Errorf("request text escaped: %s", b)
	}
	out, err := dlq.DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	if out.InvocationID != "inv-1" || out.Class != "SERVER" || !out.FailedAt.Equal(in.FailedAt) ||
		len(out.ToolsCompleted) != 1 || string(out.OriginalRequest()) != string(in.Request) || out.V != dlq.Version {
		t.Fatalf("round trip: %+v", out)
	}
}

func TestSetRequestKeepsInvalidInputVerbatim(t *testing.T) {
	for name, raw := range map[string][]byte{
		"not json":     []byte(`{{{ not json`),
		"truncated":    []byte(`{"v":1,"agent":"sup`),
		"invalid utf8": []byte("{\"v\":1,\"x\":\"\xff\xfe\"}"),
		"binary":       {0, 1, 2, 0xff, '\n'},
	} {
		t.Run(name, func(t *testing.T) {
			e := sampleEntry()
			e.SetRequest(raw)
			if e.Request != nil || string(e.RequestRaw) != string(raw) || e.RequestSize != len(raw) {
				t.Fatalf("SetRequest: request %q raw %q", e.Request, e.RequestRaw)
			}
			b, err := e.Encode()
			if err != nil {
				t.Fatal(err)
			}
			out, err := dlq.DecodeEntry(b)
			if err != nil {
				t.Fatal(err)
			}
			if string(out.OriginalRequest()) != string(raw) {
				t.Fatalf("original request %q, want %q", out.OriginalRequest(), raw)
			}
		})
	}
}

func TestDecodeEntryRejects(t *testing.T) {
	good, err := sampleEntry().Encode()
	if err != nil {
		t.Fatal(err)
	}
	g := string(good)
	bad := map[string]string{
		"empty":            ``,
		"spaces":           "  \n",
		"not json":         `hello`,
		"array":            `[1]`,
		"null":             `null`,
		"truncated":        g[:len(g)/2],
		"trailing garbage": g + `x`,
		"wrong version":    strings.Replace(g, `"v":1`, `"v":9`, 1),
		"string version":   strings.Replace(g, `"v":1`, `"v":"1"`, 1),
		"no invocation":    strings.Replace(g, `"invocation_id":"inv-1"`, `"invocation_id":""`, 1),
		"dotted agent":     strings.Replace(g, `"agent":"support"`, `"agent":"sup.port"`, 1),
		"lower class":      strings.Replace(g, `"class":"SERVER"`, `"class":"server"`, 1),
		"no failed_at":     strings.Replace(g, `"failed_at":"2025-01-02T03:05:05Z"`, `"failed_at":"0001-01-01T00:00:00Z"`, 1),
		"first after last": strings.Replace(g, `"first_failed_at":"2025-01-02T03:04:05Z"`, `"first_failed_at":"2026-01-01T00:00:00Z"`, 1),
		"bad time":         strings.Replace(g, `"failed_at":"2025-01-02T03:05:05Z"`, `"failed_at":"yesterday"`, 1),
		"both requests":    strings.Replace(g, `"request_size"`, `"request_raw":"AAE=","request_size"`, 1),
	}
	for name, in := range bad {
		t.Run(name, func(t *testing.T) {
			if in == g {
				t.Fatal("test case did not change the entry")
			}
			_, err := dlq.DecodeEntry([]byte(in))
			var de *dlq.DecodeError
			if !errors.As(err, &de) || de.Reason == "" || !errors.Is(err, dlq.ErrInvalidEntry) {
				t.Fatalf("DecodeEntry = %v, want *DecodeError", err)
			}
		})
	}
	// Unknown fields and an unknown but well-formed class are accepted.
	fwd := strings.Replace(g, `"class":"SERVER"`, `"class":"NEW_CLASS","future":{"x":1}`, 1)
	if _, err := dlq.DecodeEntry([]byte(fwd)); err != nil {
		t.Fatalf("forward-compatible entry rejected: %v", err)
	}
}

func FuzzDecodeEntry(f *testing.F) {
	good, _ := sampleEntry().Encode()
	f.Add(good)
	f.Add(good[:len(good)-7])
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"v":1,"invocation_id":"a","agent":"b","class":"X","failed_at":"2025-01-01T00:00:00Z","first_failed_at":"2025-01-01T00:00:00Z","request_raw":"!!"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := dlq.DecodeEntry(data)
		if err != nil {
			var de *dlq.DecodeError
			if !errors.As(err, &de) || de.Reason == "" {
				t.Fatalf("error is not a *DecodeError: %v", err)
			}
			return
		}
		if e.V != dlq.Version || e.InvocationID == "" || e.Agent == "" || e.Class == "" || e.FailedAt.IsZero() {
			t.Fatalf("accepted an invalid entry: %+v", e)
		}
		// What was accepted encodes and decodes again.
		b, err := e.Encode()
		if err != nil {
			t.Fatalf("encode accepted entry: %v", err)
		}
		if _, err := dlq.DecodeEntry(b); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
	})
}
