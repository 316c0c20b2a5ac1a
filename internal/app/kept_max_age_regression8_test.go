package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
)

// TestConnectWarnsOfKeptStreamMaxAge: Regression (found in review,
// twenty-fifth session): an operator shortened streams.results_max_age
// (72h to 24h) and streams.dlq_max_age (30 days to 14) and restarted the
// workers. streams.Ensure keeps the live, longer max ages by design (README
// "The DLQ stream is never shortened either") and reports them in
// Applied.KeptMaxAge, but app.Connect logged only kept replicas: the
// setting was silently not applied. Each kept max age is now a warning
// naming the stream, the live and the configured max age, and the by-hand
// command (nats stream edit <stream> --max-age <configured>), as kept
// replicas and longer KV buckets (warnLongerBucket) are; a start whose
// configuration matches the live streams warns of nothing.
func TestConnectWarnsOfKeptStreamMaxAge(t *testing.T) {
	_, _, srv := natstest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connect := func(cfg config.Worker) string {
		t.Helper()
		cfg.Embedded.Enabled, cfg.NATS.URL, cfg.Redis.URL = false, srv.ClientURL(), ""
		var logs bytes.Buffer
		inf, err := app.Connect(ctx, cfg, app.NewLogger(&logs, "info"))
		if err != nil {
			t.Fatal(err)
		}
		inf.Close()
		return logs.String()
	}
	// warnings returns the warn lines by the stream they name.
	warnings := func(logs string) map[string]map[string]any {
		t.Helper()
		out := map[string]map[string]any{}
		for _, line := range strings.Split(logs, "\n") {
			if line == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			if name, ok := m["stream"].(string); ok && m["level"] == "warn" {
				out[name] = m
			}
		}
		return out
	}
	before := config.DefaultWorker()
	before.Streams.ResultsMaxAge = 72 * time.Hour
	before.Streams.DLQMaxAge = 30 * 24 * time.Hour
	before.Idempotency.Retention = 40 * 24 * time.Hour
	if w := warnings(connect(before)); len(w) > 0 {
		t.Fatalf("the first start (streams created as configured) warned of streams: %v", w)
	}
	if w := warnings(connect(before)); len(w) > 0 {
		t.Fatalf("a start with the live streams' own max ages warned of streams: %v", w)
	}

	after := before
	after.Streams.ResultsMaxAge = 24 * time.Hour
	after.Streams.DLQMaxAge = 14 * 24 * time.Hour
	logs := connect(after)
	w := warnings(logs)
	for _, c := range []struct {
		name, key  string
		live, want time.Duration
		arg        string
	}{
		{streams.DefaultResultsStream, "streams.results_max_age", 72 * time.Hour, 24 * time.Hour, "24h"},
		{streams.DefaultDLQStream, "streams.dlq_max_age", 30 * 24 * time.Hour, 14 * 24 * time.Hour, "336h"},
	} {
		m, ok := w[c.name]
		if !ok {
			t.Errorf("the worker kept %s's longer max age (its configuration asked for less) without a warning naming the stream; logs:\n%s", c.name, logs)
			continue
		}
		if got := m["stream_max_age"]; got != float64(c.live.Milliseconds()) {
			t.Errorf("%s: stream_max_age = %v, want the live %v in ms", c.name, got, c.live)
		}
		if got := m["configured"]; got != float64(c.want.Milliseconds()) {
			t.Errorf("%s: configured = %v, want %v in ms", c.name, got, c.want)
		}
		msg, _ := m["message"].(string)
		for _, want := range []string{c.key, "nats stream edit " + c.name + " --max-age " + c.arg} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: the warning %q does not say %q", c.name, msg, want)
			}
		}
	}
	if m, ok := w[streams.DefaultRequestsStream]; ok {
		t.Errorf("the requests stream, whose max age is not kept, was warned of: %v", m)
	}
}
