package config_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/config"
)

// Regression (found in review, twentieth session): the configuration file
// refused unknown keys, but an AGENTFLEET_ variable that named no key was
// ignored without a word; with AGENTFLEET_NATSURL (for
// AGENTFLEET_NATS_URL) the worker ran an embedded server of its own and
// consumed nothing from the fleet's. CheckEnv refuses it, names it and the
// closest known name, and never quotes a value.
func TestCheckEnvRefusesUnknownVariables(t *testing.T) {
	for _, tc := range []struct{ name, suggest string }{
		{"AGENTFLEET_NATSURL", "AGENTFLEET_NATS_URL"},
		{"AGENTFLEET_NATS_ULR", "AGENTFLEET_NATS_URL"},
		{"AGENTFLEET_nats_url", "AGENTFLEET_NATS_URL"},
		{"AGENTFLEET_REDIS_PREFX", "AGENTFLEET_REDIS_PREFIX"},
		{"AGENTFLEET_WORKER_CONCURENCY", "AGENTFLEET_WORKER_CONCURRENCY"},
		{"AGENTFLEET_REPLAYER_CONFIG_FILE", "AGENTFLEET_REPLAYER_CONFIG"},
		{"AGENTFLEET_XYZZY_PLUGH_FROB", ""},
	} {
		environ := []string{"PATH=/bin", "AGENTFLEET_NATS_URL=nats://127.0.0.1:4222", tc.name + "=s3cr3t-value"}
		err := config.CheckEnv(environ)
		if !errors.Is(err, config.ErrUnknownEnv) {
			t.Errorf("%s: CheckEnv returned %v, want ErrUnknownEnv", tc.name, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.name) {
			t.Errorf("%s: the error does not name the variable: %s", tc.name, msg)
		}
		if tc.suggest != "" && !strings.Contains(msg, "did you mean "+tc.suggest+"?") {
			t.Errorf("%s: the error does not suggest %s: %s", tc.name, tc.suggest, msg)
		}
		if tc.suggest == "" && strings.Contains(msg, "did you mean") {
			t.Errorf("%s: a far-fetched suggestion: %s", tc.name, msg)
		}
		if strings.Contains(msg, "s3cr3t") {
			t.Errorf("%s: the error quotes the value: %s", tc.name, msg)
		}
	}
}

// Every unknown variable is listed once; the known ones and other
// prefixes pass, and so does one environment shared by the worker and the
// replayer (each command's keys, both file variables).
func TestCheckEnvAcceptsEveryKnownName(t *testing.T) {
	known := config.KnownEnvNames()
	var environ []string
	for _, n := range known {
		environ = append(environ, n+"=x")
	}
	environ = append(environ, "AGENTFLEETX=1", "XAGENTFLEET_NATSURL=1", "NATS_URL=nats://h", "=odd", "AGENTFLEET_CONFIG")
	if err := config.CheckEnv(environ); err != nil {
		t.Fatalf("known names refused: %v", err)
	}
	for _, want := range []string{
		"AGENTFLEET_CONFIG", config.ReplayerConfigEnv, "AGENTFLEET_NATS_URL", "AGENTFLEET_WORKER_CONCURRENCY",
		"AGENTFLEET_REPLAY_RATE", "AGENTFLEET_DRAIN_INTERVAL", "AGENTFLEET_COOLDOWN_THRESHOLD", "AGENTFLEET_MODEL_SIM_TOOL_FAULTS",
	} {
		if !slices.Contains(known, want) {
			t.Errorf("KnownEnvNames lacks %s", want)
		}
	}
	err := config.CheckEnv([]string{"AGENTFLEET_NATSURL=a", "AGENTFLEET_NATSURL=b", "AGENTFLEET_REDISURL=c"})
	if got := strings.Count(err.Error(), "AGENTFLEET_NATSURL:"); got != 1 {
		t.Errorf("AGENTFLEET_NATSURL listed %d times: %v", got, err)
	}
	if !strings.Contains(err.Error(), "AGENTFLEET_REDISURL") {
		t.Errorf("the second unknown variable is not listed: %v", err)
	}
}

// Every AGENTFLEET_ name the project's programs, configuration files and
// scripts set or document is one CheckEnv accepts: the chaos harness, the
// producer, configs/*.yaml, .ci/run and the Makefile. (Tests are not
// scanned: some set misspelt names on purpose.)
func TestEveryAGENTFLEETNameInTheRepoIsKnown(t *testing.T) {
	root := repoFile(t, ".")
	re := regexp.MustCompile(`AGENTFLEET_[A-Z0-9][A-Z0-9_]*`)
	known := config.KnownEnvNames()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == ".git" || rel == "docs" || strings.HasPrefix(d.Name(), ".data") || d.Name() == "testdata" || rel == filepath.Join(".ci", "cache") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(path, "_test.go"):
			return nil
		case strings.HasSuffix(path, ".go"), strings.HasSuffix(path, ".yaml"), strings.HasSuffix(path, ".yml"),
			rel == "Makefile", rel == filepath.Join(".ci", "run"):
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, name := range re.FindAllString(string(b), -1) {
			name = strings.TrimRight(name, "_")
			if !slices.Contains(known, name) {
				t.Errorf("%s names %s, which CheckEnv refuses", rel, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
