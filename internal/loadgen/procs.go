package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentfleet/agentfleet/internal/childproc"
	"github.com/agentfleet/agentfleet/internal/streams"
)

// frameworkProcsDescription says what the framework phase runs with
// --processes.
const frameworkProcsDescription = "agentfleet worker processes (cmd/worker, one per --workers): support agent, SIMULATED model, 3 model calls, get_order, idempotent refund_order, final answer"

// workerReadyTimeout bounds a worker process's start: connect, ensure the
// streams and buckets, and wait on the consumer.
const workerReadyTimeout = time.Minute

// workerBinary returns the worker program for --processes: cfg.WorkerBin,
// or ./cmd/worker of the module built into dir (with the go command, as
// the chaos soak does). say gets a line about the build.
func workerBinary(ctx context.Context, cfg Config, dir string, say io.Writer) (string, error) {
	if cfg.WorkerBin != "" {
		return cfg.WorkerBin, nil
	}
	mod := cfg.ModuleDir
	if mod == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("loadgen: %w", err)
		}
		if mod, err = childproc.FindModuleDir(wd); err != nil {
			return "", fmt.Errorf("loadgen: --processes builds ./cmd/worker: run it in the module or give --worker-bin: %w", err)
		}
	}
	bin := filepath.Join(dir, "worker")
	fmt.Fprintf(say, "  building ./cmd/worker of %s for the worker processes ...\n", mod)
	if err := childproc.Build(ctx, mod, "./cmd/worker", bin); err != nil {
		return "", fmt.Errorf("loadgen: %w", err)
	}
	return bin, nil
}

// workerProcs is a framework phase's fleet as processes.
type workerProcs struct {
	set   childproc.Set
	procs []*childproc.Proc
	dir   string // configurations and logs
}

// startWorkerProcs starts cfg.Workers worker processes with the
// configuration an in-process worker k would get (workerConfig), written
// as YAML and passed with --config, and waits until every one of them is
// pulling from the phase's consumer.
func startWorkerProcs(ctx context.Context, e *env, cfg Config, name, keyPrefix string, sc streams.Config) (_ *workerProcs, err error) {
	dir, err := os.MkdirTemp("", "agentfleet-loadgen-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	f := &workerProcs{dir: dir}
	defer func() {
		if err != nil {
			_ = f.stop() // the start's error says what went wrong
		}
	}()
	for k := range cfg.Workers {
		wc := workerConfig(e, cfg, k, keyPrefix, sc)
		wc.LogLevel = "warn" // a process's log is a file: keep what explains a failure
		b, err := yaml.Marshal(wc)
		if err != nil {
			return nil, fmt.Errorf("loadgen: worker %d config: %w", k, err)
		}
		path := filepath.Join(dir, "worker-"+strconv.Itoa(k)+".yaml")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, fmt.Errorf("loadgen: worker %d config: %w", k, err)
		}
		p, err := f.set.Start(dir, "worker-"+strconv.Itoa(k), cfg.workerBin, []string{"--config", path}, childproc.Env(cfg.WorkerEnv...))
		if err != nil {
			return nil, fmt.Errorf("loadgen: %w", err)
		}
		f.procs = append(f.procs, p)
	}
	if err := f.waitPulling(ctx, e, sc); err != nil {
		return nil, err
	}
	return f, nil
}

// waitPulling waits until the phase's consumer has a pull request waiting
// from every worker process (each worker fetches for its free slots), a
// process exits, or workerReadyTimeout passes.
func (f *workerProcs) waitPulling(ctx context.Context, e *env, sc streams.Config) error {
	wctx, cancel := context.WithTimeout(ctx, workerReadyTimeout)
	defer cancel()
	cons, err := e.js.Consumer(wctx, sc.RequestsStream, sc.WorkerConsumer)
	if err != nil {
		return fmt.Errorf("loadgen: worker consumer: %w", err)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, p := range f.procs {
			if p.Exited() {
				return fmt.Errorf("loadgen: %s exited while starting (%v): %s", p.Name, p.Err(), logTail(p.LogPath, 2000))
			}
		}
		if info, err := cons.Info(wctx); err == nil && info.NumWaiting >= len(f.procs) {
			return nil
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("loadgen: worker processes not pulling after %v (logs in %s): %w", workerReadyTimeout, f.dir, wctx.Err())
		case <-tick.C:
		}
	}
}

// pids are the processes' ids.
func (f *workerProcs) pids() []int {
	out := make([]int, len(f.procs))
	for i, p := range f.procs {
		out[i] = p.PID()
	}
	return out
}

// peakRSS is the sum of the processes' peak resident sets (VmHWM; read
// while they run).
func (f *workerProcs) peakRSS() int64 {
	var sum int64
	for _, p := range f.procs {
		sum += pidStatus(strconv.Itoa(p.PID()), "VmHWM")
	}
	return sum
}

// failed reports a process that exited during the phase.
func (f *workerProcs) failed() error {
	for _, p := range f.procs {
		if p.Exited() {
			return fmt.Errorf("loadgen: %s exited during the phase (%v): %s", p.Name, p.Err(), logTail(p.LogPath, 2000))
		}
	}
	return nil
}

// stop sends every process SIGTERM (a worker drains, then exits 0), waits
// up to 30 s for each, and reports one that did not exit cleanly. The
// directory is removed when every process exited cleanly.
func (f *workerProcs) stop() error {
	var errs []string
	for _, p := range f.procs {
		p.Stop(syscall.SIGTERM, 30*time.Second)
		if err := p.Err(); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v: %s", p.Name, err, logTail(p.LogPath, 1000)))
		}
	}
	f.set.KillAll()
	if len(errs) > 0 {
		return fmt.Errorf("loadgen: worker processes did not stop cleanly (logs in %s): %s", f.dir, strings.Join(errs, "; "))
	}
	return os.RemoveAll(f.dir)
}

// logTail is the last n bytes of a log file, on one line.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(bytes.ReplaceAll(bytes.TrimSpace(b), []byte("\n"), []byte(" | ")))
}
