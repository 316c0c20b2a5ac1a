package retry

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Header names of server retry hints.
const (
	// HeaderRetryAfter is the standard header: delay seconds or an HTTP
	// date.
	HeaderRetryAfter = "Retry-After"
	// HeaderRetryAfterMs is OpenAI's millisecond-precision hint.
	HeaderRetryAfterMs = "Retry-After-Ms"
)

// ServerHint returns the wait the server asked for before retrying, found
// in err's chain: model.ProviderError.RetryAfter; the retry-after-ms or
// Retry-After header of an *openai.Error's HTTP response (Retry-After as
// seconds or as an HTTP date, relative to now); a google.rpc.RetryInfo
// retryDelay in a genai.APIError's details (value or pointer). It reports
// false when there is no positive hint.
func ServerHint(err error, now time.Time) (time.Duration, bool) {
	if err == nil {
		return 0, false
	}
	var pe *model.ProviderError
	if errors.As(err, &pe) && pe != nil && pe.RetryAfter > 0 {
		return pe.RetryAfter, true
	}
	var oe *openai.Error
	if errors.As(err, &oe) && oe != nil && oe.Response != nil {
		if d, ok := HeaderHint(oe.Response.Header, now); ok {
			return d, true
		}
	}
	var gv genai.APIError
	if errors.As(err, &gv) {
		if d, ok := retryInfoDelay(gv.Details); ok {
			return d, true
		}
	}
	var gp *genai.APIError
	if errors.As(err, &gp) && gp != nil {
		if d, ok := retryInfoDelay(gp.Details); ok {
			return d, true
		}
	}
	return 0, false
}

// HeaderHint reads retry-after-ms, then Retry-After (delay seconds, possibly
// fractional, or an HTTP date relative to now) from h. It reports false
// when neither gives a positive wait.
func HeaderHint(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get(HeaderRetryAfterMs)); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && !math.IsInf(ms, 0) {
			if d := durationOf(ms / 1000); d > 0 {
				return d, true
			}
		}
	}
	v := strings.TrimSpace(h.Get(HeaderRetryAfter))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if d := durationOf(s); s > 0 && !math.IsInf(s, 0) && d > 0 {
			return d, true
		}
		return 0, false
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d, true
		}
	}
	return 0, false
}

// durationOf converts seconds to a Duration, saturating instead of
// overflowing.
func durationOf(seconds float64) time.Duration {
	if seconds >= float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(seconds * float64(time.Second))
}

// retryInfoDelay returns the retryDelay of a google.rpc.RetryInfo detail:
// a protobuf JSON duration ("17s", "0.5s") or, defensively, an object with
// seconds and nanos.
func retryInfoDelay(details []map[string]any) (time.Duration, bool) {
	for _, d := range details {
		if t, _ := d["@type"].(string); t != taxonomy.TypeRetryInfo {
			continue
		}
		switch v := d["retryDelay"].(type) {
		case string:
			if dur, err := time.ParseDuration(strings.TrimSpace(v)); err == nil && dur > 0 {
				return dur, true
			}
		case map[string]any:
			secs := number(v["seconds"])
			nanos := number(v["nanos"])
			if total := secs + nanos/1e9; total > 0 && !math.IsInf(total, 0) && !math.IsNaN(total) && durationOf(total) > 0 {
				return durationOf(total), true
			}
		}
	}
	return 0, false
}

func number(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case string:
		f, err := strconv.ParseFloat(n, 64)
		if err == nil {
			return f
		}
	}
	return 0
}
