package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/config"
)

// configs/dlq-replayer.yaml documents every key with its default: loading it
// must change nothing.
func TestReplayerYAMLDocumentsTheDefaults(t *testing.T) {
	got, err := config.LoadReplayer(repoFile(t, "configs/dlq-replayer.yaml"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if want := config.DefaultReplayer(); !reflect.DeepEqual(got, want) {
		t.Fatalf("configs/dlq-replayer.yaml differs from the defaults:\n got %+v\nwant %+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
	// Every key of the struct appears in the file.
	data, err := os.ReadFile(repoFile(t, "configs/dlq-replayer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := config.DefaultReplayer()
	for _, name := range config.EnvNames(&c) {
		parts := strings.Split(strings.ToLower(strings.TrimPrefix(name, config.EnvPrefix)), "_")
		last := parts[len(parts)-1]
		if !strings.Contains(string(data), last+":") && !strings.Contains(string(data), strings.Join(parts[len(parts)-2:], "_")+":") {
			t.Errorf("key for %s not documented in configs/dlq-replayer.yaml", name)
		}
	}
}

func TestReplayerPrecedenceAndValidation(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.yaml")
	writeFile(t, p, "replay:\n  max_replays: 5\n  rate: 7\n")
	env := map[string]string{
		"AGENTFLEET_REPLAY_RATE":             "9",
		"AGENTFLEET_REDIS_URL":               "redis://127.0.0.1:6379/0",
		"AGENTFLEET_REPLAY_RESULT_TIMEOUT":   "5s",
		"AGENTFLEET_REPLAYER_CONFIG":         "/nonexistent-is-not-read-when-a-path-is-given",
		"AGENTFLEET_DRAIN_HALT_BACKOFF":      "1m",
		"AGENTFLEET_REPLAY_HALT_MIN_RESULTS": "3",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c, err := config.LoadReplayer(p, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if c.Replay.MaxReplays != 5 || c.Replay.Rate != 9 || c.Redis.URL == "" || c.Replay.ResultTimeout != 5*time.Second ||
		c.Drain.HaltBackoff != time.Minute || c.Replay.HaltMinResults != 3 {
		t.Fatalf("file/env not applied: %+v", c)
	}
	// The env variable names the file when no path is given.
	env["AGENTFLEET_REPLAYER_CONFIG"] = p
	delete(env, "AGENTFLEET_REPLAY_RATE")
	c, err = config.LoadReplayer("", lookup)
	if err != nil || c.Replay.Rate != 7 {
		t.Fatalf("AGENTFLEET_REPLAYER_CONFIG not read: %v %+v", err, c.Replay)
	}
	// A typo is an error.
	writeFile(t, p, "replay:\n  max_replay: 5\n")
	if _, err := config.LoadReplayer(p, noEnv); err == nil || !strings.Contains(err.Error(), "max_replay") {
		t.Fatalf("typo not reported: %v", err)
	}
	bad := config.DefaultReplayer()
	bad.Replay.HaltRatio, bad.Replay.MaxReplays, bad.NATS.URL = 2, 0, ""
	err = bad.Validate()
	for _, s := range []string{"halt_ratio", "max_replays", "nats.url"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("Validate does not report %s: %v", s, err)
		}
	}
	w := config.DefaultReplayer().Worker()
	if w.Embedded.Enabled || w.NATS.URL != config.DefaultReplayerNATSURL || w.Streams.DLQ != "AGENT_DLQ" {
		t.Fatalf("Worker(): %+v", w)
	}
	r := config.DefaultReplayer()
	r.Redis.URL = "redis://u:pw@h:1/0"
	if strings.Contains(r.Redacted().Redis.URL, "pw") {
		t.Fatal("not redacted")
	}
}

// The replayer refuses an idempotency retention that does not outlive its
// DLQ max age, from the file, from the environment, and when only the DLQ
// max age is raised; a retention that outlives it passes.
func TestReplayerRetentionMustOutliveDLQ(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.yaml")
	cases := []struct {
		name, file string
		env        map[string]string
		ok         bool
	}{
		{"file retention", "idempotency:\n  retention: 24h\n", nil, false},
		{"env retention", "", map[string]string{"AGENTFLEET_IDEMPOTENCY_RETENTION": "24h"}, false},
		{"file DLQ max age", "streams:\n  dlq_max_age: 720h\n", nil, false},
		{"both raised", "streams:\n  dlq_max_age: 720h\nidempotency:\n  retention: 744h\n", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			writeFile(t, p, tc.file+"\n")
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			c, err := config.LoadReplayer(p, lookup)
			if err == nil {
				err = c.Validate()
			}
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "idempotency.retention") {
				t.Fatalf("accepted: %v", err)
			}
		})
	}
}
