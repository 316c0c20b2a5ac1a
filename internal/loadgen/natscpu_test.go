package loadgen

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/redistest"
)

// Regression (found in review, twenty-second session): the NATS CPU
// figures are the run's server's, not any nats-server's.
//
// The cpuMeter took "the NATS server's CPU" from the first process on the
// machine whose name is nats-server (findProcess), whatever server the run
// used: --nats-url was never compared with it. Here the run's NATS server is
// in the test process (natstest, as TestFrameworkAsProcessesOnRedis uses
// it), and another process named nats-server burns a core (as a chaos
// soak's nats-server, or the machine's own on :4222, would serve other
// clients). Its CPU was reported as the phase's "NATS CPU ms/inv" and
// added into total_cpu_ms_per_invocation and the CPU ceiling: a figure of
// a process the run never used, printed as the framework's cost.
func TestNATSCPUIsTheRunsServersNotAnyNATSServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server and runs a framework phase")
	}
	redistest.Client(t)
	yes, err := exec.LookPath("yes")
	if err != nil {
		t.Skip("no yes binary")
	}
	decoy := filepath.Join(t.TempDir(), "nats-server")
	if err := os.Symlink(yes, decoy); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(decoy)
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	time.Sleep(100 * time.Millisecond) // let exec finish so /proc/<pid>/comm names it
	measured := findProcess("nats-server")
	if measured != cmd.Process.Pid {
		// Another nats-server sorts first in /proc (the machine's own on
		// :4222): give it work of other clients while the phase runs.
		nc, err := nats.Connect("nats://127.0.0.1:4222")
		if err != nil {
			t.Skipf("nats-server pid %d is measured and nothing on :4222 to load it: %v", measured, err)
		}
		defer nc.Close()
		stop := make(chan struct{})
		done := make(chan struct{})
		defer func() { close(stop); <-done }()
		go func() {
			defer close(done)
			subj := "review.loadgen.noise." + strings.ReplaceAll(t.Name(), "/", "_")
			payload := make([]byte, 512)
			for {
				select {
				case <-stop:
					return
				default:
				}
				for range 1000 {
					_ = nc.Publish(subj, payload)
				}
				_ = nc.Flush()
			}
		}()
	}

	srv := natstest.RunServer(t) // the run's server: in this process
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var table strings.Builder
	rep, err := Run(ctx, Config{NATSURL: srv.ClientURL(), RedisURL: redistest.URL(), N: 200, Workers: 1, Concurrency: 8,
		SkipBaselines: true, Timeout: time.Minute}, &table, io.Discard)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, table.String())
	}
	fw := rep.phase("framework")
	t.Logf("NATS CPU ms/inv %.3f, total %.3f\n%s", fw.NATSCPUMSPerInvocation, fw.TotalCPUMSPerInvocation, table.String())
	if fw.NATSCPUMSPerInvocation > 0 {
		t.Errorf("the phase reports %.3f ms of NATS server CPU per invocation, measured on pid %d (a process named nats-server the run never used: its NATS is %s, in this process)",
			fw.NATSCPUMSPerInvocation, measured, srv.ClientURL())
	}
}

// findProcess returns the pid of the first process named comm (0 if none):
// what the CPU meter measured as the NATS server before natsServer.
func findProcess(comm string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err == nil && strings.TrimSpace(string(b)) == comm {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
			return pid
		}
	}
	return 0
}
