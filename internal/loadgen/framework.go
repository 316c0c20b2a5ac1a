package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/internal/worker"
)

// frameworkDescription says what the framework phase runs.
const frameworkDescription = "agentfleet workers (app.StartWorker): support agent, SIMULATED model, 3 model calls, get_order, idempotent refund_order, final answer"

// workerConfig is the configuration of in-process worker k.
func workerConfig(e *env, cfg Config, k int, keyPrefix string, sc streams.Config) config.Worker {
	wc := config.DefaultWorker()
	wc.Streams.Requests, wc.Streams.Results, wc.Streams.DLQ = sc.RequestsStream, sc.ResultsStream, sc.DLQStream
	wc.Streams.RequestPrefix, wc.Streams.ResultPrefix, wc.Streams.DLQPrefix = sc.RequestPrefix, sc.ResultPrefix, sc.DLQPrefix
	wc.NATS.URL = e.natsURL
	wc.Embedded.Enabled = false
	wc.Redis.URL = e.redisURL // "" (embedded): the NATS KV stores
	wc.Redis.Prefix, wc.Redis.DemoPrefix = keyPrefix, keyPrefix
	wc.Worker.Name = fmt.Sprintf("loadgen-%s-w%d", e.run, k)
	wc.Worker.Concurrency = cfg.Concurrency
	wc.Model.Spec = "sim"
	wc.Model.Sim = config.Sim{Latency: cfg.Latency, Seed: uint64(k + 1)}
	wc.MetricsAddr = ""
	wc.LogLevel = "error"
	return wc
}

// runFramework runs the fleet: cfg.Workers workers in process. name is the
// phase's name ("framework", or "framework_r2"… in later rounds): its
// streams, keys and invocation ids are its own.
func runFramework(ctx context.Context, e *env, cfg Config, logOut io.Writer, name string) (_ *Phase, err error) {
	p := &Phase{Name: name, Description: frameworkDescription}
	// The workers ensure this topology themselves (app.StreamsConfig: same
	// names, prefixes and consumer sizing); it is created here first so the
	// clean-up knows it.
	sc := e.topology(name, cfg.Concurrency)
	if err := e.ensure(ctx, sc); err != nil {
		return nil, err
	}
	keyPrefix := ""
	if e.rdb != nil {
		keyPrefix = e.keyPrefix(name)
	}
	wctx, stopWorkers := context.WithCancel(ctx)
	var running []*app.Running
	var fleet *workerProcs
	defer func() {
		stopWorkers()
		for _, r := range running {
			_ = r.Wait()
		}
		if fleet != nil {
			err = errors.Join(err, fleet.stop())
		}
	}()
	if cfg.Processes {
		p.Description = frameworkProcsDescription
		if fleet, err = startWorkerProcs(ctx, e, cfg, name, keyPrefix, sc); err != nil {
			return nil, err
		}
		p.WorkerPIDs = fleet.pids()
	}
	for k := range cfg.Workers {
		if fleet != nil {
			break
		}
		r, err := app.StartWorker(wctx, workerConfig(e, cfg, k, keyPrefix, sc), os.Getenv, logOut)
		if err != nil {
			return nil, fmt.Errorf("loadgen: start worker %d: %w", k, err)
		}
		running = append(running, r)
	}
	cl, err := newClient(e, sc)
	if err != nil {
		return nil, err
	}
	w := newWaiter()
	sub, err := subscribeResults(e.nc, sc.ResultPrefix, w)
	if err != nil {
		return nil, fmt.Errorf("loadgen: framework: subscribe: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	var orders *orderPool
	if cfg.Window <= maxOrders {
		orders = newOrderPool(orderReset(e, keyPrefix))
		if e.rdb == nil && name != "framework" {
			// The NATS KV orders are shared by every round: an earlier
			// round's refunds are still booked, so reset before first use.
			orders.markAllUsed()
		}
	}
	stopProfile, err := startProfile(cfg.CPUProfile)
	if err != nil {
		return nil, err
	}
	idPrefix := "lg-" + e.run + "-" + name
	rss := startRSS(ctx)
	var workersCPU func() time.Duration
	if fleet != nil {
		workersCPU = fleet.cpu
	}
	cpu := startCPU(ctx, e.rdb, e.nats, workersCPU)
	inflight := func() int { return 0 }
	if cfg.Inflight > 0 {
		// Gathering a registry reads /proc and costs CPU: only where the
		// worker-side figure is a goal.
		var gs []gatherer
		for _, r := range running {
			gs = append(gs, r.Registry.Gather)
		}
		if fleet != nil {
			gs = fleet.gatherers()
		}
		inflight = sampleInFlight(ctx, gs)
	}
	var memErr error
	err = load{n: cfg.N, window: cfg.Window, timeout: cfg.Timeout, idPrefix: idPrefix,
		submit: cl.submit, wait: w, orders: orders,
		midway: func() { memErr = writeMemProfile(cfg.MemProfile) }}.run(ctx, p)
	p.PeakRSSBytes, p.RSSSource = rss.finish()
	cpu.finish(ctx, p)
	if fleet != nil {
		p.WorkerPeakRSSBytes = fleet.peakRSS()
		p.PeakRSSBytes += p.WorkerPeakRSSBytes
		p.RSSSource += " + each worker process's VmHWM, summed"
		err = errors.Join(err, fleet.failed()) // a worker that died explains lost invocations
	}
	p.WorkerMaxInFlight = inflight()
	stopProfile()
	if memErr != nil && err == nil {
		err = memErr
	}
	refunds := func(ctx context.Context) ([]support.Refund, error) {
		if fleet == nil {
			return running[0].Infra.Stores.Refunds(ctx)
		}
		var rdb redis.UniversalClient // nil when embedded: not a typed nil, which would mean Redis
		if e.rdb != nil {
			rdb = e.rdb
		}
		st, err := app.OpenExistingStores(ctx, workerConfig(e, cfg, 0, keyPrefix, sc), e.js, rdb)
		if err != nil {
			return nil, err
		}
		return st.Refunds(ctx)
	}
	recs, rerr := refunds(ctx)
	if rerr != nil {
		return p, fmt.Errorf("loadgen: framework: read refunds: %w", rerr)
	}
	raw := make([][]byte, 0, len(recs))
	for _, r := range recs {
		b, _ := json.Marshal(r)
		raw = append(raw, b)
	}
	if p.Refunds, p.DuplicateRefunds, p.refundsByID, rerr = countRefunds(raw, idPrefix); rerr != nil {
		return p, rerr
	}
	return p, err
}

// orderReset sets an order's refunded amount back to 0 and keeps its refund
// records, in the demo orders service the workers use.
func orderReset(e *env, prefix string) func(ctx context.Context, orderID string) error {
	if e.rdb != nil {
		key := support.NewRedisOrders(e.rdb, prefix).RefundsListKey()
		hash := key[:len(key)-len(support.RefundsKey)] + "demo:refunded_cents"
		return func(ctx context.Context, orderID string) error {
			return e.rdb.HDel(ctx, hash, orderID).Err()
		}
	}
	return func(ctx context.Context, orderID string) error {
		kv, err := e.js.KeyValue(ctx, support.RefundsBucket)
		if err != nil {
			return err
		}
		key := "order." + kvToken(orderID)
		for range 10 {
			ent, err := kv.Get(ctx, key)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			var st map[string]any
			if err := json.Unmarshal(ent.Value(), &st); err != nil {
				return err
			}
			st["refunded_cents"] = 0
			b, _ := json.Marshal(st)
			if _, err = kv.Update(ctx, key, b, ent.Revision()); err == nil {
				return nil
			}
		}
		return fmt.Errorf("order %s changed under the reset", orderID)
	}
}

// gatherer reads one worker's metrics: its registry in process, its
// /metrics endpoint as a process.
type gatherer func() ([]*dto.MetricFamily, error)

// sampleInFlight watches the workers' in-flight gauge (every 250 ms); the
// returned func stops and returns the highest sum seen.
func sampleInFlight(ctx context.Context, workers []gatherer) func() int {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var peak float64
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			sum := 0.0
			for _, gather := range workers {
				mfs, err := gather()
				if err != nil {
					continue
				}
				for _, mf := range mfs {
					if mf.GetName() == worker.MetricInFlight {
						for _, m := range mf.GetMetric() {
							sum += m.GetGauge().GetValue()
						}
					}
				}
			}
			peak = max(peak, sum)
			select {
			case <-ctx.Done():
				return
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() int { close(stop); wg.Wait(); return int(peak) }
}

// startProfile starts a CPU profile into path ("" does nothing).
func startProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("loadgen: cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("loadgen: cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}

// writeMemProfile writes the heap profile into path ("" does nothing). It
// is taken half-way through the phase, under full load: in-use space shows
// what the in-flight invocations hold, alloc space what the run allocated
// since the process started.
func writeMemProfile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("loadgen: mem profile: %w", err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		return fmt.Errorf("loadgen: mem profile: %w", err)
	}
	return nil
}
