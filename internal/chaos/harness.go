package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/childproc"
)

// Harness is one chaos run: its servers, worker processes and connections.
// Create it with New, run it with Run, and always Close it (Close kills
// every child process still running).
type Harness struct {
	cfg    Config
	dir    string
	logDir string
	ps     childproc.Set
	start  time.Time // when the chaos clock started

	natsBin, redisBin      string
	workerBin, replayerBin string
	built                  bool // Build succeeded
	natsPort, redisPort    int
	natsDir, redisDir      string
	natsURL, redisURL      string
	natsProc, redisProc    *childproc.Proc
	natsGen, redisGen      int
	nc                     *nats.Conn
	js                     jetstream.JetStream
	rdb                    *redis.Client
	rng                    *rand.Rand
	rngMu                  sync.Mutex
	workersMu              sync.Mutex
	workers                []*childproc.Proc
	workerGen              []int
	fleetDown              bool // between stopFleet and startFleet: a crashed worker is reported, not restarted
	faultsOn               bool
	closeOnce              sync.Once
	// crashes are notes on workers found to have exited by themselves
	// (by killWorker, stopFleet or checkWorkers) that noteCrashes has not
	// reported yet; crashNoted holds every process already noted, so each
	// crash is reported once. Both under workersMu.
	crashes    []string
	crashNoted map[*childproc.Proc]bool
}

// New checks cfg and the server binaries and creates the work directory.
// Nothing runs until Run.
func New(cfg Config) (*Harness, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	natsBin, redisBin, err := ServerBinaries(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.ModuleDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
		if cfg.ModuleDir, err = childproc.FindModuleDir(wd); err != nil {
			return nil, err
		}
	}
	dir := cfg.WorkDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "agentfleet-chaos-"); err != nil {
			return nil, fmt.Errorf("chaos: work dir: %w", err)
		}
	}
	h := &Harness{
		cfg: cfg, dir: dir, logDir: filepath.Join(dir, "logs"),
		natsBin: natsBin, redisBin: redisBin,
		natsDir: filepath.Join(dir, "nats"), redisDir: filepath.Join(dir, "redis"),
		rng: rand.New(rand.NewPCG(cfg.Seed, 0x6368616f73)),
	}
	for _, d := range []string{h.logDir, h.natsDir, h.redisDir, filepath.Join(dir, "bin")} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
	}
	return h, nil
}

// WorkDir returns the directory holding the binaries, server data and logs.
func (h *Harness) WorkDir() string { return h.dir }

// LogDir returns the directory of the child processes' logs.
func (h *Harness) LogDir() string { return h.logDir }

// Close kills every child process still running, closes the connections
// and removes the work directory unless KeepWorkDir. It is safe to call more
// than once.
func (h *Harness) Close() {
	h.closeOnce.Do(func() {
		if h.nc != nil {
			h.nc.Close()
		}
		if h.rdb != nil {
			_ = h.rdb.Close()
		}
		h.ps.KillAll()
		if !h.cfg.KeepWorkDir && h.cfg.WorkDir == "" {
			_ = os.RemoveAll(h.dir)
		}
	})
}

// logf prints a progress line stamped with the time since the chaos clock
// started.
func (h *Harness) logf(format string, args ...any) {
	var since time.Duration
	if !h.start.IsZero() {
		since = time.Since(h.start)
	}
	fmt.Fprintf(h.cfg.Out, "[%6.1fs] %s\n", since.Seconds(), fmt.Sprintf(format, args...))
}

func (h *Harness) intN(n int) int {
	h.rngMu.Lock()
	defer h.rngMu.Unlock()
	return h.rng.IntN(n)
}

// Build builds the worker and, unless the replay is off, the replayer into
// the work directory, except where Config.WorkerBin or Config.ReplayerBin
// names one already built. Run calls it when it has not run yet; a caller
// that must bound the soak but not a cold build (a build on an empty cache
// can take minutes on a busy machine) calls Build first with a context of
// its own. Calling it again after it succeeded does nothing.
func (h *Harness) Build(ctx context.Context) error {
	if h.built {
		return nil
	}
	bin := filepath.Join(h.dir, "bin")
	needReplayer := h.cfg.Replay == ReplayAuto || h.cfg.Replay == ReplayBinary
	if h.cfg.WorkerBin == "" || (needReplayer && h.cfg.ReplayerBin == "") {
		h.logf("building ./cmd/worker and ./cmd/dlq-replayer into %s", bin)
	}
	h.workerBin = h.cfg.WorkerBin
	if h.workerBin == "" {
		h.workerBin = filepath.Join(bin, "worker")
		if err := childproc.Build(ctx, h.cfg.ModuleDir, "./cmd/worker", h.workerBin); err != nil {
			return err
		}
	}
	if needReplayer {
		h.replayerBin = h.cfg.ReplayerBin
		if h.replayerBin == "" {
			h.replayerBin = filepath.Join(bin, "dlq-replayer")
			if err := childproc.Build(ctx, h.cfg.ModuleDir, "./cmd/dlq-replayer", h.replayerBin); err != nil {
				return err
			}
		}
	}
	h.built = true
	return nil
}

// startNATS starts nats-server with JetStream on the harness's port and
// store directory (the same on every restart, so the streams survive).
func (h *Harness) startNATS(ctx context.Context) error {
	h.natsGen++
	args := []string{"-a", "127.0.0.1", "-p", strconv.Itoa(h.natsPort), "-js", "-sd", h.natsDir, "-n", "agentfleet-chaos"}
	p, err := h.ps.Start(h.logDir, fmt.Sprintf("nats-server.%d", h.natsGen), h.natsBin, args, childproc.Env())
	if err != nil {
		return err
	}
	h.natsProc = p
	return waitListening(ctx, p, h.natsPort, 20*time.Second)
}

// startRedis starts redis-server on the harness's port with an append-only
// file in its directory, so a restart keeps the sessions, idempotency
// records and demo:refunds (a Redis that forgets them on restart would
// make the duplicate check meaningless).
func (h *Harness) startRedis(ctx context.Context) error {
	h.redisGen++
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(h.redisPort), "--dir", h.redisDir,
		"--save", "", "--appendonly", "yes", "--appendfsync", "everysec", "--daemonize", "no", "--protected-mode", "yes"}
	p, err := h.ps.Start(h.logDir, fmt.Sprintf("redis-server.%d", h.redisGen), h.redisBin, args, childproc.Env())
	if err != nil {
		return err
	}
	h.redisProc = p
	if err := waitListening(ctx, p, h.redisPort, 20*time.Second); err != nil {
		return err
	}
	// Listening is not loaded: wait for PING (LOADING while the AOF is read).
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(h.redisPort)})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Ping(pctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("chaos: redis-server does not answer: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopSignal is how a server is stopped for a restart.
func (h *Harness) stopSignal() syscall.Signal {
	if h.cfg.HardRestarts {
		return syscall.SIGKILL
	}
	return syscall.SIGTERM
}

// restartNATS stops nats-server and starts it again on the same port and
// store directory.
func (h *Harness) restartNATS(ctx context.Context) (time.Duration, error) {
	t0 := time.Now()
	h.natsProc.Stop(h.stopSignal(), 15*time.Second)
	if err := h.startNATS(ctx); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// restartRedis stops redis-server and starts it again with its data.
func (h *Harness) restartRedis(ctx context.Context) (time.Duration, error) {
	t0 := time.Now()
	h.redisProc.Stop(h.stopSignal(), 15*time.Second)
	if err := h.startRedis(ctx); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// connect opens the harness's own NATS connection (reconnecting forever)
// and Redis client.
func (h *Harness) connect() error {
	nc, err := nats.Connect(h.natsURL, nats.Name("agentfleet-chaos"), nats.MaxReconnects(-1),
		nats.ReconnectWait(200*time.Millisecond), nats.ReconnectBufSize(-1))
	if err != nil {
		return fmt.Errorf("chaos: nats connect: %w", err)
	}
	h.nc = nc
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("chaos: jetstream: %w", err)
	}
	h.js = js
	h.rdb = redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(h.redisPort), MaxRetries: 5})
	return nil
}

// workerEnv is the environment of a worker process: the chaos timings
// (short AckWait, session and claim leases so a SIGKILLed worker's work is
// picked up within seconds) and the fault settings.
func (h *Harness) workerEnv(i int, faults bool) []string {
	modelFaults, toolFaults := "", 0.0
	if faults {
		modelFaults, toolFaults = h.cfg.ModelFaults, h.cfg.ToolFaults
	}
	return append(childproc.Env(
		"AGENTFLEET_NATS_URL="+h.natsURL,
		"AGENTFLEET_REDIS_URL="+h.redisURL,
		"AGENTFLEET_MODEL_SPEC=sim",
		"AGENTFLEET_MODEL_SIM_FAULTS="+modelFaults,
		"AGENTFLEET_MODEL_SIM_TOOL_FAULTS="+strconv.FormatFloat(toolFaults, 'g', -1, 64),
		"AGENTFLEET_MODEL_SIM_SEED="+strconv.FormatUint(h.cfg.Seed*1000+uint64(i)*100+uint64(h.workerGen[i]), 10),
		"AGENTFLEET_WORKER_CONCURRENCY="+strconv.Itoa(h.cfg.Concurrency),
		"AGENTFLEET_STREAMS_ACK_WAIT=9s",
		"AGENTFLEET_WORKER_SESSION_LEASE=9s",
		"AGENTFLEET_IDEMPOTENCY_LEASE=6s",
		"AGENTFLEET_WORKER_DRAIN_TIMEOUT=5s",
		"AGENTFLEET_WORKER_INFRA_BACKOFF_MAX=4s",
		"AGENTFLEET_METRICS_ADDR=",
		"AGENTFLEET_LOG_LEVEL=info",
	), h.cfg.WorkerEnv...)
}

// startWorker starts worker i (a new generation of it).
func (h *Harness) startWorker(i int) (*childproc.Proc, error) {
	h.workersMu.Lock()
	defer h.workersMu.Unlock()
	return h.startWorkerLocked(i)
}

// startWorkerLocked is startWorker with h.workersMu held.
func (h *Harness) startWorkerLocked(i int) (*childproc.Proc, error) {
	h.workerGen[i]++
	name := fmt.Sprintf("worker-%d.%d", i+1, h.workerGen[i])
	args := []string{"--name", fmt.Sprintf("chaos-w%d-g%d", i+1, h.workerGen[i])}
	p, err := h.ps.Start(h.logDir, name, h.workerBin, args, h.workerEnv(i, h.faultsOn))
	if err != nil {
		return nil, err
	}
	h.workers[i] = p
	return p, nil
}

// exitedByItself reports whether p ended without the harness asking: any
// exit the harness did not ask for is a finding, whatever its status (a
// clean exit 0 from a run loop that gave up shrinks the fleet as surely as
// a crash, and a signal the harness never sent, the OOM killer's or a
// fatal runtime error's SIGABRT, is not one of its kills).
func exitedByItself(p *childproc.Proc) bool {
	return p != nil && p.Exited() && !p.Stopped()
}

// noteCrashLocked records that worker i's process p exited by itself, once
// per process, for noteCrashes to report. h.workersMu must be held.
func (h *Harness) noteCrashLocked(i int, p *childproc.Proc) {
	if h.crashNoted[p] {
		return
	}
	if h.crashNoted == nil {
		h.crashNoted = map[*childproc.Proc]bool{}
	}
	h.crashNoted[p] = true
	status := "exit status 0"
	if err := p.Err(); err != nil {
		status = err.Error()
	}
	h.crashes = append(h.crashes, fmt.Sprintf("worker %d exited by itself (%s, log %s)", i+1, status, p.LogPath))
}

// replaceCrashed restarts worker i if its slot still holds old and old
// exited by itself, recording the crash. Found in review, eighteenth
// session: the progress loop and the chaos loop could both restart the
// same crashed worker, leaving one of the two new processes outside
// h.workers (never stopped, never checked); checking the slot and starting
// the new process under the one lock makes the replacement happen once.
// It returns the new process, or nil when there was nothing to replace.
func (h *Harness) replaceCrashed(i int, old *childproc.Proc) (*childproc.Proc, error) {
	h.workersMu.Lock()
	defer h.workersMu.Unlock()
	if h.workers[i] != old || !exitedByItself(old) {
		return nil, nil
	}
	h.noteCrashLocked(i, old)
	if h.fleetDown {
		// Stopped for good, or for a phase change: report, never bring a
		// worker back (found in review, eighteenth session: the final
		// check's report restarted a worker that then ran through the
		// check phase).
		return nil, nil
	}
	return h.startWorkerLocked(i)
}

// startFleet starts cfg.Workers workers with or without faults.
func (h *Harness) startFleet(faults bool) error {
	h.workersMu.Lock()
	h.fleetDown = false
	h.workersMu.Unlock()
	h.faultsOn = faults
	if h.workers == nil {
		h.workers = make([]*childproc.Proc, h.cfg.Workers)
		h.workerGen = make([]int, h.cfg.Workers)
	}
	for i := range h.cfg.Workers {
		if _, err := h.startWorker(i); err != nil {
			return err
		}
	}
	return nil
}

// stopFleet stops every worker with SIGTERM (they drain, then stop at a
// step boundary and Nak) and waits. A worker that had already exited by
// itself (Stop does nothing to it) is recorded as a crash for noteCrashes:
// found in review, eighteenth session, a crash after the progress loop's
// last check was otherwise replaced silently by the replay phase's restart
// or never looked at by the final stop.
func (h *Harness) stopFleet() {
	h.workersMu.Lock()
	h.fleetDown = true
	ws := append([]*childproc.Proc(nil), h.workers...)
	h.workersMu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ws {
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Stop(syscall.SIGTERM, 20*time.Second)
		}()
	}
	wg.Wait()
	h.workersMu.Lock()
	defer h.workersMu.Unlock()
	for i, p := range ws {
		if exitedByItself(p) {
			h.noteCrashLocked(i, p)
		}
	}
}

// killWorker SIGKILLs a random worker and starts it again after a pause.
// It reports whether it killed one: a worker that had already exited by
// itself is not killed but recorded as a crash (found in review, eighteenth
// session: it used to be "killed", replaced and logged as one of the
// harness's own SIGKILLs, so the crash was never reported) and restarted
// at once.
func (h *Harness) killWorker(ctx context.Context) (string, bool, error) {
	i := h.intN(h.cfg.Workers)
	h.workersMu.Lock()
	p := h.workers[i]
	h.workersMu.Unlock()
	pid := p.PID()
	p.Stop(syscall.SIGKILL, 0) // does nothing (and does not mark p stopped) if p had exited
	if exitedByItself(p) {
		np, err := h.replaceCrashed(i, p)
		if err != nil {
			return "", false, err
		}
		if np == nil {
			return fmt.Sprintf("worker %d (pid %d) had exited by itself and was already restarted; not killed", i+1, pid), false, nil
		}
		return fmt.Sprintf("worker %d (pid %d) had exited by itself; not killed, restarted as pid %d", i+1, pid, np.PID()), false, nil
	}
	select {
	case <-ctx.Done():
	case <-time.After(500 * time.Millisecond):
	}
	h.workersMu.Lock()
	defer h.workersMu.Unlock()
	if h.workers[i] != p { // not expected: only killWorker replaces a worker the harness stopped
		return fmt.Sprintf("SIGKILL worker %d (pid %d), already restarted as pid %d", i+1, pid, h.workers[i].PID()), true, nil
	}
	np, err := h.startWorkerLocked(i)
	if err != nil {
		return "", true, err
	}
	return fmt.Sprintf("SIGKILL worker %d (pid %d), restarted as pid %d", i+1, pid, np.PID()), true, nil
}

// checkWorkers restarts the workers that exited by themselves and returns a
// note for each crash not reported yet (those killWorker and stopFleet
// found too): a worker that dies on its own is a finding, but the run goes
// on.
func (h *Harness) checkWorkers() []string {
	var errs []string
	for i := range h.cfg.Workers {
		h.workersMu.Lock()
		p := h.workers[i]
		h.workersMu.Unlock()
		if _, err := h.replaceCrashed(i, p); err != nil {
			errs = append(errs, err.Error())
		}
	}
	h.workersMu.Lock()
	notes := h.crashes
	h.crashes = nil
	h.workersMu.Unlock()
	return append(notes, errs...)
}
