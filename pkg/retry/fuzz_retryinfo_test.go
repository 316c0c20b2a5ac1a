package retry_test

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/retry"
)

// FuzzRetryInfo: a Gemini error's details of any JSON shape (the SDK
// decodes them into []map[string]any) never panic ServerHint; a hint it
// returns is positive and, for a RetryInfo retryDelay in protobuf duration
// form ("17s") or the {seconds, nanos} object form, the delay the first
// usable one says (saturated at the largest Duration; NaN and infinite are
// no hint), the same for the value and the pointer error.
func FuzzRetryInfo(f *testing.F) {
	for _, s := range []string{
		`[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"17s"}]`,
		`[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":{"seconds":"2","nanos":500000000}}]`,
		`[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":{"seconds":1e300}}]`,
		`[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":{"seconds":"-1","nanos":2e9}}]`,
		`[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":{"seconds":"NaN"}}]`,
		`[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":{"seconds":"Inf","nanos":"-Inf"}}]`,
		`[{"@type":"type.googleapis.com/google.rpc.QuotaFailure"},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0.000000001s"}]`,
		`[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":" 2562047h47m16.854775807s "}]`,
		`[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":["1s"]},null,{}]`,
	} {
		f.Add([]byte(s))
	}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		var details []map[string]any
		if json.Unmarshal(data, &details) != nil {
			return
		}
		d, ok := retry.ServerHint(genai.APIError{Code: 429, Details: details}, now)
		dp, okp := retry.ServerHint(&genai.APIError{Code: 429, Details: details}, now)
		if d != dp || ok != okp {
			t.Fatalf("value %v,%v and pointer %v,%v errors differ", d, ok, dp, okp)
		}
		if ok && d <= 0 || !ok && d != 0 {
			t.Fatalf("hint %v, %v", d, ok)
		}
		// The first RetryInfo whose delay is a positive hint is the one.
		for _, det := range details {
			if det["@type"] != "type.googleapis.com/google.rpc.RetryInfo" {
				continue
			}
			want, wantOK := expectedDelay(det["retryDelay"])
			if !wantOK {
				continue
			}
			if !ok || d != want {
				t.Fatalf("RetryInfo %v: hint %v, %v; want %v", det["retryDelay"], d, ok, want)
			}
			return
		}
		if ok {
			t.Fatalf("hint %v from details without a usable RetryInfo: %s", d, data)
		}
	})
}

// expectedDelay is the reference reading of a retryDelay value.
func expectedDelay(v any) (time.Duration, bool) {
	switch x := v.(type) {
	case string:
		d, err := time.ParseDuration(strings.TrimSpace(x))
		return d, err == nil && d > 0
	case map[string]any:
		secs, nanos := num(x["seconds"]), num(x["nanos"])
		total := secs + nanos/1e9
		if math.IsNaN(total) || math.IsInf(total, 0) || total <= 0 {
			return 0, false
		}
		if total >= float64(math.MaxInt64)/1e9 {
			return math.MaxInt64, true
		}
		d := time.Duration(total * 1e9)
		return d, d > 0
	}
	return 0, false
}

func num(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case string:
		if f, err := strconv.ParseFloat(n, 64); err == nil {
			return f
		}
	}
	return 0
}
