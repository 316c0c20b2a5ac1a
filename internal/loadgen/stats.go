package loadgen

import (
	"slices"
	"time"
)

// Phase is what one phase measured.
type Phase struct {
	// Name is "bare", "minimal" or "framework".
	Name string `json:"name"`
	// Description says what the phase does per invocation.
	Description string `json:"description"`
	// Submitted, Completed (status "completed", or acked for bare) and
	// Lost (no result within the timeout) count invocations; Other counts
	// any other status.
	Submitted int            `json:"submitted"`
	Completed int            `json:"completed"`       // Completed counts completed invocations.
	Other     map[string]int `json:"other,omitempty"` // Other counts results of any other status, by status.
	Lost      int            `json:"lost"`            // Lost counts invocations without a result in time.
	// Refunds is the number of executed refund records of this phase and
	// DuplicateRefunds the (invocation, order) pairs refunded more than
	// once (must be 0). Not measured for bare.
	Refunds          int `json:"refunds"`
	DuplicateRefunds int `json:"duplicate_refunds"` // DuplicateRefunds counts pairs refunded more than once.
	// ElapsedMS is first submit → last result.
	ElapsedMS float64 `json:"elapsed_ms"`
	// PerSecond is Completed / elapsed; SteadyPerSecond the rate between
	// the 10th and the 90th percentile of completion times (no ramp-up or
	// tail).
	PerSecond       float64 `json:"invocations_per_s"`
	SteadyPerSecond float64 `json:"steady_invocations_per_s"` // SteadyPerSecond is the steady completion rate.
	// Latency percentiles, submit → result, in milliseconds.
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"` // P99MS is the 99th percentile latency.
	MaxMS float64 `json:"max_ms"` // MaxMS is the highest latency.
	// PeakRSSBytes is the process's peak resident set during the phase
	// (VmHWM after a reset, else the highest VmRSS sampled); it includes
	// the load generator and, when embedded, the NATS server. With worker
	// processes each one's VmHWM is added (a sum of peaks).
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// WorkerPeakRSSBytes is the worker processes' part of PeakRSSBytes
	// (--processes; 0 in process).
	WorkerPeakRSSBytes int64  `json:"worker_processes_peak_rss_bytes,omitempty"`
	RSSSource          string `json:"rss_source"` // RSSSource says how PeakRSSBytes was measured.
	// MaxInFlight is the most invocations submitted and not yet finished
	// at once (client side).
	MaxInFlight int `json:"max_in_flight"`
	// CPUMSPerInvocation is this process's CPU time (user + system) per
	// completed invocation: workers or consumers plus the load generator
	// (and the NATS server when embedded), plus the worker processes'
	// (WorkerCPUMSPerInvocation) when they are processes.
	// RedisCPUMSPerInvocation and NATSCPUMSPerInvocation are the servers'
	// (0 when not measured).
	CPUMSPerInvocation       float64 `json:"cpu_ms_per_invocation"`
	WorkerCPUMSPerInvocation float64 `json:"worker_processes_cpu_ms_per_invocation,omitempty"` // WorkerCPUMSPerInvocation: see CPUMSPerInvocation.
	// WorkerPIDs are the worker processes of the phase (--processes).
	WorkerPIDs              []int   `json:"worker_pids,omitempty"`
	RedisCPUMSPerInvocation float64 `json:"redis_cpu_ms_per_invocation,omitempty"` // RedisCPUMSPerInvocation is Redis's CPU ms per invocation.
	NATSCPUMSPerInvocation  float64 `json:"nats_cpu_ms_per_invocation,omitempty"`  // NATSCPUMSPerInvocation is the NATS server's CPU ms per invocation.
	// RedisReadsPerInvocation is the Redis server's read events
	// (total_reads_processed: about one per round trip of any client) per
	// completed invocation, and RedisCommandsPerInvocation its commands
	// (total_commands_processed, including those scripts and MULTI/EXEC
	// run). Unlike times, both are counts: the same code gives about the
	// same figures on a busy or an idle machine. They include the load
	// generator's own few requests.
	RedisReadsPerInvocation    float64 `json:"redis_reads_per_invocation,omitempty"`
	RedisCommandsPerInvocation float64 `json:"redis_commands_per_invocation,omitempty"` // RedisCommandsPerInvocation: see RedisReadsPerInvocation.
	// AllocsPerInvocation and AllocKiBPerInvocation are the heap
	// allocations of this process (runtime.MemStats Mallocs and
	// TotalAlloc) per completed invocation: the in-process workers or
	// consumers and the load generator's own side, which both phases share
	// (with --embedded the NATS server too). Counts again, steady on a
	// noisy machine; the garbage collector's CPU follows them. Not counted
	// (0, printed "-") with worker processes: their heap is not this
	// process's.
	AllocsPerInvocation   float64 `json:"allocs_per_invocation"`
	AllocKiBPerInvocation float64 `json:"alloc_kib_per_invocation"` // AllocKiBPerInvocation: see AllocsPerInvocation.
	// WritesPerInvocation and ReadsPerInvocation are this process's write
	// and read system calls (syscw and syscr of /proc/self/io) per
	// completed invocation: on loopback a write costs the sender the
	// receiver's TCP work too, so they are a large part of the CPU. Counts
	// again; 0 where /proc cannot tell, and with worker processes (not
	// this process's calls).
	WritesPerInvocation float64 `json:"write_syscalls_per_invocation,omitempty"`
	ReadsPerInvocation  float64 `json:"read_syscalls_per_invocation,omitempty"` // ReadsPerInvocation: see WritesPerInvocation.
	// BoundRatio is SteadyPerSecond over the Little's-law bound (in-flight
	// mode only).
	BoundRatio float64 `json:"bound_ratio,omitempty"`
	// TotalCPUMSPerInvocation is the CPU of everything an invocation used
	// on this machine, per completed invocation: CPUMSPerInvocation plus
	// the Redis and NATS servers' (set only when both servers' CPU was
	// measured, or Redis's with the NATS server embedded in this process).
	// CPUCeilingPerSecond is the rate the machine's cores could give at
	// that cost, NumCPU × 1000 / TotalCPUMSPerInvocation: a phase running
	// near it is bound by CPU, not by how many invocations it holds in
	// flight. CeilingBoundRatio is that ceiling over the Little's-law bound
	// (in-flight mode only): the most BoundRatio this machine allows the
	// phase's code.
	TotalCPUMSPerInvocation float64 `json:"total_cpu_ms_per_invocation,omitempty"`
	CPUCeilingPerSecond     float64 `json:"cpu_ceiling_per_s,omitempty"`   // CPUCeilingPerSecond: see TotalCPUMSPerInvocation.
	CeilingBoundRatio       float64 `json:"ceiling_bound_ratio,omitempty"` // CeilingBoundRatio: see TotalCPUMSPerInvocation.
	// WorkerMaxInFlight is the highest sum of the workers' in-flight gauge
	// sampled every 250 ms (in-flight mode only).
	WorkerMaxInFlight int `json:"worker_max_in_flight,omitempty"`
	// Failed says why the phase failed (an invocation that did not
	// complete, a refund duplicated, lost or made by an invocation that did
	// not complete, an error of the phase itself); empty when it did all
	// of its work. A failed phase's figures are printed, but no ratio or
	// goal rests on it (Report.NotComputed).
	Failed string `json:"failed,omitempty"`

	// completedIDs are the invocations that completed, and refundsByID
	// the refund records per invocation id: Run compares the two sets.
	completedIDs map[string]bool
	refundsByID  map[string]int
}

// sample is one finished invocation.
type sample struct {
	latency time.Duration
	at      time.Duration // completion, since the phase started
}

// summarise fills the rate and latency fields from samples.
func (p *Phase) summarise(samples []sample, elapsed time.Duration) {
	p.ElapsedMS = ms(elapsed)
	if elapsed > 0 {
		p.PerSecond = float64(p.Completed) / elapsed.Seconds()
	}
	if len(samples) == 0 {
		return
	}
	lat := make([]time.Duration, len(samples))
	at := make([]time.Duration, len(samples))
	for i, s := range samples {
		lat[i], at[i] = s.latency, s.at
	}
	slices.Sort(lat)
	slices.Sort(at)
	p.P50MS, p.P99MS, p.MaxMS = ms(pct(lat, 50)), ms(pct(lat, 99)), ms(lat[len(lat)-1])
	lo, hi := len(at)/10, len(at)*9/10
	if hi > lo && at[hi-1] > at[lo] {
		p.SteadyPerSecond = float64(hi-1-lo) / (at[hi-1] - at[lo]).Seconds()
	} else {
		p.SteadyPerSecond = p.PerSecond
	}
}

// pct returns the p-th percentile of sorted (nearest rank).
func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
