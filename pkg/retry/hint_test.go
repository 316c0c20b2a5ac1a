package retry_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/retry"
)

func TestServerHint(t *testing.T) {
	now := time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		err  error
		want time.Duration
		ok   bool
	}{
		{"none", errors.New("x"), 0, false},
		{"nil", nil, 0, false},
		{"gemini pointer", fmt.Errorf("w: %w", &genai.APIError{Code: 429, Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}}}), 1500 * time.Millisecond, true},
		{"gemini object form", genai.APIError{Code: 429, Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": map[string]any{"seconds": "2", "nanos": float64(5e8)}}}}, 2500 * time.Millisecond, true},
		{"gemini other detail", genai.APIError{Code: 429, Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.Help", "retryDelay": "9s"}}}, 0, false},
		{"gemini garbage delay", genai.APIError{Code: 429, Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "soon"}}}, 0, false},
		{"provider", &model.ProviderError{RetryAfter: time.Second}, time.Second, true},
		{"provider zero", &model.ProviderError{StatusCode: 429}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := retry.ServerHint(tc.err, now)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("ServerHint = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestHeaderHint(t *testing.T) {
	now := time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		{http.Header{"Retry-After": {"0.25"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After": {"0"}}, 0, false},
		{http.Header{"Retry-After": {"-4"}}, 0, false},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0, false},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second, true},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"3"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After-Ms": {"nope"}, "Retry-After": {"3"}}, 3 * time.Second, true},
		{http.Header{"Retry-After": {"tomorrow"}}, 0, false},
		{http.Header{"Retry-After": {"1e-12"}, "Retry-After-Ms": {"1e-9"}}, 0, false},
		{nil, 0, false},
	}
	for i, tc := range cases {
		got, ok := retry.HeaderHint(tc.h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("case %d %v: got %v, %v; want %v, %v", i, tc.h, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzHeaderHint checks that header parsing never panics and never returns
// a non-positive hint as valid.
func FuzzHeaderHint(f *testing.F) {
	f.Add("3", "")
	f.Add("Wed, 21 Oct 2015 07:28:00 GMT", "1500")
	f.Add("1e400", "NaN")
	f.Add("-0", "Inf")
	f.Add("1e-12", "1e-9")
	f.Fuzz(func(t *testing.T, after, afterMs string) {
		h := http.Header{}
		h.Set("Retry-After", after)
		h.Set("Retry-After-Ms", afterMs)
		d, ok := retry.HeaderHint(h, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
		if ok && d <= 0 {
			t.Fatalf("non-positive hint %v accepted", d)
		}
		d, ok = retry.ServerHint(genai.APIError{Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": after}}}, time.Now())
		if ok && d <= 0 {
			t.Fatalf("non-positive RetryInfo hint %v accepted", d)
		}
	})
}
