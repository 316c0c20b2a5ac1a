package chaos_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/chaos"
	"github.com/agentfleet/agentfleet/internal/testmain"
)

func TestMain(m *testing.M) {
	testmain.Dispatch() // a child started by the test runs as the worker or replayer
	os.Exit(m.Run())
}

// testWriter sends the harness's lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestSmallChaosRound runs a small soak against real nats-server and
// redis-server processes: 150 invocations under 40 % model faults and 10 %
// tool faults, one worker SIGKILL, one Redis restart, one NATS restart, a
// DLQ replay with faults off, and the invariant checker. It asserts the
// invariants only, never timings.
func TestSmallChaosRound(t *testing.T) {
	if _, _, err := chaos.ServerBinaries(chaos.Config{}); err != nil {
		t.Skipf("chaos round skipped: nats-server or redis-server binary missing: %v", err)
	}
	out := testWriter{t}
	// The workers and the replayer are this test binary (TestMain), not
	// binaries built here: see internal/testmain.
	self, err := testmain.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h, err := chaos.New(chaos.Config{
		Invocations: 150, Duration: 75 * time.Second, Workers: 3, Concurrency: 16,
		KillEvery: 5 * time.Second, MaxKills: 1, SubmitRate: 12,
		WorkDir: t.TempDir(), Out: out,
		WorkerBin: self, WorkerEnv: []string{testmain.Env(testmain.Worker)},
		ReplayerBin: self, ReplayerEnv: []string{testmain.Env(testmain.Replayer)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close) // kills every child process, also when the test fails
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rep, err := h.Run(ctx)
	if err != nil {
		dumpLogs(t, h.LogDir())
		t.Fatal(err)
	}
	var sb strings.Builder
	rep.Print(&sb)
	t.Log(sb.String())
	if rep.Kills != 1 || rep.RedisRestarts != 1 || rep.NATSRestarts != 1 {
		t.Errorf("chaos done: %d kills, %d Redis restarts, %d NATS restarts; want 1 each", rep.Kills, rep.RedisRestarts, rep.NATSRestarts)
	}
	if rep.Submitted != 150 {
		t.Errorf("submitted %d of 150", rep.Submitted)
	}
	// The children are this race-enabled test binary (under -race): a race
	// one of them hit is in its log, whether it exited or was killed.
	if raced := racyLogs(t, h.LogDir()); len(raced) > 0 {
		dumpLogs(t, h.LogDir())
		t.Errorf("a data race was reported in %v", raced)
	}
	if v := rep.Violations(); len(v) > 0 {
		dumpLogs(t, h.LogDir())
		for _, s := range v {
			t.Error(s)
		}
	}
}

// racyLogs returns the child logs in dir that report a data race.
func racyLogs(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(files) == 0 {
		t.Errorf("no child logs in %s", dir)
	}
	var raced []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Error(err)
			continue
		}
		if strings.Contains(string(b), "WARNING: DATA RACE") {
			raced = append(raced, filepath.Base(f))
		}
	}
	return raced
}

// dumpLogs logs the end of every child's log.
func dumpLogs(t *testing.T, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		t.Logf("--- %s (last %d lines)\n%s", filepath.Base(f), len(lines), strings.Join(lines, "\n"))
	}
}
