package loadgen

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/internal/testmain"
)

func TestMain(m *testing.M) {
	testmain.Dispatch() // a worker child (--processes tests) runs cmd/worker's main here
	os.Exit(m.Run())
}

// TestFrameworkAsProcesses runs the framework phase with its two workers
// as processes (this test binary as cmd/worker) on an embedded server, and
// checks that they, not in-process workers, did the work: two child pids,
// CPU counted for them, every invocation completed and refunded once, no
// heap counts (their heap is not ours), and both children gone after Run.
func TestFrameworkAsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded NATS server and two worker processes")
	}
	rep, table := runAsProcesses(t, Config{Embedded: true})
	fw := rep.phase("framework")
	if fw == nil {
		t.Fatalf("no framework phase:\n%s", table)
	}
	if fw.Completed != 20 || fw.Lost != 0 || fw.Refunds != 20 || fw.DuplicateRefunds != 0 {
		t.Fatalf("completed %d lost %d refunds %d dup %d, want 20 0 20 0\n%s", fw.Completed, fw.Lost, fw.Refunds, fw.DuplicateRefunds, table)
	}
	if len(fw.WorkerPIDs) != 2 || fw.WorkerPIDs[0] == fw.WorkerPIDs[1] || slices.Contains(fw.WorkerPIDs, os.Getpid()) {
		t.Fatalf("worker pids %v, want two children of this process", fw.WorkerPIDs)
	}
	if fw.WorkerCPUMSPerInvocation <= 0 || fw.CPUMSPerInvocation <= fw.WorkerCPUMSPerInvocation {
		t.Fatalf("CPU ms/inv %.3f with workers %.3f: the worker processes' CPU is not counted, or this process's is not", fw.CPUMSPerInvocation, fw.WorkerCPUMSPerInvocation)
	}
	if fw.AllocsPerInvocation != 0 || !strings.Contains(fw.RSSSource, "worker process") || !rep.Processes {
		t.Fatalf("allocs %.0f, RSS %q, report processes %v: the phase is reported as in-process", fw.AllocsPerInvocation, fw.RSSSource, rep.Processes)
	}
	if !strings.Contains(table, "(framework: processes)") || !strings.Contains(table, "(workers ") {
		t.Fatalf("the table does not say the workers were processes:\n%s", table)
	}
	for _, pid := range fw.WorkerPIDs {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Fatalf("worker process %d still exists after Run (kill 0: %v)", pid, err)
		}
	}
}

// runAsProcesses runs the framework phase only, 20 invocations on two
// worker processes (this test binary as cmd/worker) of concurrency 4, on
// the servers cfg names, and returns the report and the printed table.
func runAsProcesses(t *testing.T, cfg Config) (*Report, string) {
	t.Helper()
	bin, err := testmain.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg.N, cfg.Workers, cfg.Concurrency, cfg.Timeout, cfg.SkipBaselines = 20, 2, 4, time.Minute, true
	cfg.Processes, cfg.WorkerBin, cfg.WorkerEnv = true, bin, []string{testmain.Env(testmain.Worker)}
	var table strings.Builder
	rep, err := Run(ctx, cfg, &table, io.Discard)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, table.String())
	}
	t.Log("\n" + table.String())
	return rep, table.String()
}

// TestWorkerConfigSurvivesYAML: what a worker process reads from its
// --config file is the configuration an in-process worker gets.
func TestWorkerConfigSurvivesYAML(t *testing.T) {
	e := &env{run: "abcd1234", natsURL: "nats://127.0.0.1:4222", redisURL: "redis://127.0.0.1:6379/0"}
	cfg := Config{Concurrency: 7, Latency: 5 * time.Millisecond}.WithDefaults()
	want, b, err := workerProcConfig(e, cfg, 1, "lg-abcd1234-framework:", e.topology("framework", cfg.Concurrency), "127.0.0.1:9999")
	if err != nil {
		t.Fatal(err)
	}
	inproc := workerConfig(e, cfg, 1, "lg-abcd1234-framework:", e.topology("framework", cfg.Concurrency))
	if want.MetricsAddr != "127.0.0.1:9999" {
		t.Fatalf("metrics address %q, want the one given", want.MetricsAddr)
	}
	if inproc.LogLevel, inproc.MetricsAddr = want.LogLevel, want.MetricsAddr; !reflect.DeepEqual(want, inproc) {
		t.Fatalf("a worker process's configuration differs from an in-process worker's beyond the log level and metrics address:\n%+v\n%+v", want, inproc)
	}
	path := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := config.LoadWorker([]string{"--config", path}, func(string) (string, bool) { return "", false }, io.Discard)
	if err != nil {
		t.Fatalf("LoadWorker: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the worker process would read\n%+v\nwant\n%+v", got, want)
	}
}

// TestWorkerProcessThatExitsAtStart: a worker program that exits at once
// fails the run with its exit in the error, without waiting out the
// readiness timeout (the run's context ends before it: waiting would
// report the context, not the exit).
func TestWorkerProcessThatExitsAtStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded NATS server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), workerReadyTimeout/2)
	defer cancel()
	_, err := Run(ctx, Config{Embedded: true, N: 5, Workers: 2, Concurrency: 2, Timeout: time.Minute, SkipBaselines: true,
		Processes: true, WorkerBin: "/bin/false"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "logs in") {
		t.Fatalf("Run with a worker that exits at start: %v, want an error naming the exit and the logs", err)
	}
}

// TestFrameworkAsProcessesOnRedis is TestFrameworkAsProcesses on the Redis
// stores (the refunds are read back from Redis, under the run's own key
// prefix) with an embedded nats-server as the external NATS.
func TestFrameworkAsProcessesOnRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server and two worker processes")
	}
	redistest.Client(t) // Redis must answer, as for every Redis test
	srv := natstest.RunServer(t)
	rep, table := runAsProcesses(t, Config{NATSURL: srv.ClientURL(), RedisURL: redistest.URL()})
	fw := rep.phase("framework")
	if fw == nil || fw.Completed != 20 || fw.Refunds != 20 || fw.DuplicateRefunds != 0 || len(fw.WorkerPIDs) != 2 || rep.Stores != "redis" {
		t.Fatalf("framework phase %+v on stores %q, want 20 completed and refunded once by 2 worker processes on redis\n%s", fw, rep.Stores, table)
	}
}

// TestInflightWithAWorkerProcess: in the in-flight mode the one worker can
// be a process; its in-flight gauge comes from its /metrics and the RSS
// goal is judged on its own peak.
func TestInflightWithAWorkerProcess(t *testing.T) {
	bin, ctx := workerProcessTest(t)
	var table strings.Builder
	// 20 in flight, 3 model calls of 100 ms each: four waves of about
	// 300 ms, so the 250 ms sampling sees a full wave.
	rep, err := Run(ctx, Config{Embedded: true, Inflight: 20, Latency: 100 * time.Millisecond, Timeout: time.Minute, SkipBaselines: true,
		Processes: true, WorkerBin: bin, WorkerEnv: []string{testmain.Env(testmain.Worker)}}, &table, io.Discard)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, table.String())
	}
	fw := rep.phase("framework")
	if fw == nil || fw.Completed != 80 || len(fw.WorkerPIDs) != 1 {
		t.Fatalf("framework phase %+v, want 80 completed by one worker process\n%s", fw, table.String())
	}
	if fw.WorkerMaxInFlight < 10 || fw.WorkerMaxInFlight > 20 {
		t.Fatalf("the worker process's in-flight gauge peaked at %d, want 10..20 (read from its /metrics)\n%s", fw.WorkerMaxInFlight, table.String())
	}
	if fw.WorkerPeakRSSBytes <= 0 || fw.WorkerPeakRSSBytes >= fw.PeakRSSBytes {
		t.Fatalf("worker RSS %d of %d: the worker process's own peak is not measured", fw.WorkerPeakRSSBytes, fw.PeakRSSBytes)
	}
	if _, ok := rep.Goals["<= 1 GiB RSS"]; !ok {
		t.Fatalf("no RSS goal in %v", rep.Goals)
	}
}

// workerProcessTest skips the test in -short mode (it starts an embedded
// NATS server and a worker process) and returns the worker binary (this
// test binary, see testmain) and a context that ends with the test or
// after 3 minutes.
func workerProcessTest(t *testing.T) (bin string, ctx context.Context) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an embedded NATS server and a worker process")
	}
	bin, err := testmain.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return bin, ctx
}
