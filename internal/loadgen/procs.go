package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/agentfleet/agentfleet/internal/childproc"
	"github.com/agentfleet/agentfleet/internal/config"
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
	set     childproc.Set
	procs   []*childproc.Proc
	dir     string        // configurations and logs
	grace   time.Duration // how long a worker may take to stop on SIGTERM
	metrics []string      // each process's /metrics URL (in-flight mode), else empty
}

// workerProcConfig is the --config file of worker process k: the
// configuration an in-process worker k gets (workerConfig), logging at
// warn (the log is a file: it keeps what explains a failure) and serving
// /metrics on metricsAddr ("" for none).
func workerProcConfig(e *env, cfg Config, k int, keyPrefix string, sc streams.Config, metricsAddr string) (config.Worker, []byte, error) {
	wc := workerConfig(e, cfg, k, keyPrefix, sc)
	wc.LogLevel, wc.MetricsAddr = "warn", metricsAddr
	b, err := yaml.Marshal(wc)
	return wc, b, err
}

// startWorkerProcs starts cfg.Workers worker processes, each with its
// workerProcConfig passed with --config, and waits until every one of them
// is pulling from the phase's consumer. On an error every process is
// stopped and the directory with their logs is kept (the error names it).
func startWorkerProcs(ctx context.Context, e *env, cfg Config, name, keyPrefix string, sc streams.Config) (_ *workerProcs, err error) {
	dir, err := os.MkdirTemp("", "agentfleet-loadgen-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	f := &workerProcs{dir: dir}
	defer func() {
		if err != nil {
			f.terminate()
		}
	}()
	for k := range cfg.Workers {
		addr := ""
		if cfg.Inflight > 0 {
			// The in-flight gauge is read from the process's /metrics.
			if addr, err = freeAddr(); err != nil {
				return nil, err
			}
			f.metrics = append(f.metrics, "http://"+addr+"/metrics")
		}
		wc, b, err := workerProcConfig(e, cfg, k, keyPrefix, sc, addr)
		if err != nil {
			return nil, fmt.Errorf("loadgen: worker %d config: %w", k, err)
		}
		// A worker drains for DrainTimeout, then closes its connections.
		f.grace = max(f.grace, wc.Worker.DrainTimeout+15*time.Second)
		path := filepath.Join(dir, "worker-"+strconv.Itoa(k)+".yaml")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, fmt.Errorf("loadgen: worker %d config: %w", k, err)
		}
		p, err := f.set.Start(dir, "worker-"+strconv.Itoa(k), cfg.workerBin, []string{"--config", path}, childproc.Env(cfg.WorkerEnv...))
		if err != nil {
			return nil, fmt.Errorf("loadgen: %w (logs in %s)", err, dir)
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
// process exits, ctx ends or workerReadyTimeout passes.
func (f *workerProcs) waitPulling(ctx context.Context, e *env, sc streams.Config) error {
	wctx, cancel := context.WithTimeout(ctx, workerReadyTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		if err := f.failed(); err != nil {
			return err
		}
		cons, err := e.js.Consumer(wctx, sc.RequestsStream, sc.WorkerConsumer)
		if err == nil {
			var info *jetstream.ConsumerInfo
			if info, err = cons.Info(wctx); err == nil && info.NumWaiting >= len(f.procs) {
				return nil
			}
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return fmt.Errorf("loadgen: waiting for the worker processes: %w", ctx.Err())
			}
			msg := fmt.Sprintf("loadgen: worker processes not all pulling from %s after %v (logs in %s)", sc.WorkerConsumer, workerReadyTimeout, f.dir)
			if lastErr != nil {
				msg += "; last consumer read: " + lastErr.Error()
			}
			return errors.New(msg + ": " + f.tails(500))
		case <-tick.C:
		}
	}
}

// freeAddr is a 127.0.0.1 address with a port free right now (the worker
// binds it a moment later; a collision fails its start, which says so).
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("loadgen: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// gatherers read each process's /metrics (in-flight mode).
func (f *workerProcs) gatherers() []gatherer {
	client := &http.Client{Timeout: 2 * time.Second}
	var out []gatherer
	for _, url := range f.metrics {
		out = append(out, func() ([]*dto.MetricFamily, error) { return scrape(client, url) })
	}
	return out
}

// scrape reads a Prometheus text exposition from url.
func scrape(client *http.Client, url string) ([]*dto.MetricFamily, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("loadgen: %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %s: %w", url, err)
	}
	out := make([]*dto.MetricFamily, 0, len(byName))
	for _, mf := range byName {
		out = append(out, mf)
	}
	return out, nil
}

// pids are the processes' ids.
func (f *workerProcs) pids() []int {
	out := make([]int, len(f.procs))
	for i, p := range f.procs {
		out[i] = p.PID()
	}
	return out
}

// cpu is the processes' user + system time so far: /proc while one runs,
// its exit state once it has exited (so an exit mid-phase neither makes
// the phase's figure negative nor reads a reused pid).
func (f *workerProcs) cpu() time.Duration {
	var d time.Duration
	for _, p := range f.procs {
		if st := p.State(); st != nil {
			d += st.UserTime() + st.SystemTime()
			continue
		}
		d += procCPU(p.PID())
	}
	return d
}

// peakRSS is the sum of the processes' peak resident sets (VmHWM; read
// while they run: an exited process counts 0).
func (f *workerProcs) peakRSS() int64 {
	var sum int64
	for _, p := range f.procs {
		if !p.Exited() {
			sum += pidStatus(strconv.Itoa(p.PID()), "VmHWM")
		}
	}
	return sum
}

// failed reports a process that has exited (workers run until SIGTERM).
func (f *workerProcs) failed() error {
	for _, p := range f.procs {
		if p.Exited() {
			return fmt.Errorf("loadgen: %s exited (%v; logs in %s): %s", p.Name, p.Err(), f.dir, logTail(p.LogPath, 2000))
		}
	}
	return nil
}

// terminate sends every running process SIGTERM at once (a worker drains,
// then exits 0) and waits for all of them, SIGKILLing one still running
// after the grace.
func (f *workerProcs) terminate() {
	var wg sync.WaitGroup
	for _, p := range f.procs {
		wg.Go(func() { p.Stop(syscall.SIGTERM, f.grace) })
	}
	wg.Wait()
	f.set.KillAll()
}

// stop terminates the processes and reports one that did not exit
// cleanly, keeping the directory with the logs; when all did, the
// directory is removed.
func (f *workerProcs) stop() error {
	f.terminate()
	var errs []string
	for _, p := range f.procs {
		if err := p.Err(); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v: %s", p.Name, err, logTail(p.LogPath, 1000)))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("loadgen: worker processes did not stop cleanly (logs in %s): %s", f.dir, strings.Join(errs, "; "))
	}
	return os.RemoveAll(f.dir)
}

// tails is the last n bytes of every process's log.
func (f *workerProcs) tails(n int) string {
	var parts []string
	for _, p := range f.procs {
		parts = append(parts, p.Name+": "+logTail(p.LogPath, n))
	}
	return strings.Join(parts, "; ")
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
