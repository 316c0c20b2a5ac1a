package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentfleet/agentfleet/internal/config"
)

// Report is a run's result, printed as a table and written as JSON.
type Report struct {
	// Provider says the model is SIMULATED.
	Provider string `json:"provider"`
	// Mode is "throughput" or "inflight".
	Mode string `json:"mode"`
	// Servers and Stores say what ran.
	NATS   string `json:"nats"`
	Redis  string `json:"redis,omitempty"` // Redis is the Redis URL, if Redis was used.
	Stores string `json:"stores"`          // Stores is "redis" or "nats-kv".
	// NATSCPU says whose CPU the phases' NATS figures are: the run's
	// nats-server process (tied to the URL's port by its listening
	// socket), this process, or "not measured: …" (then
	// Phase.NATSCPUMSPerInvocation and TotalCPUMSPerInvocation are 0).
	NATSCPU string `json:"nats_cpu"`
	// Config is the run's settings.
	N       int `json:"n"`
	Workers int `json:"workers"` // Workers is the number of workers.
	// Processes is set when the framework's workers ran as processes
	// (--processes), not in the load generator's process.
	Processes   bool    `json:"worker_processes,omitempty"`
	Concurrency int     `json:"concurrency"`      // Concurrency is each worker's concurrency.
	Window      int     `json:"window"`           // Window is the number of requests kept in flight.
	LatencyMS   float64 `json:"model_latency_ms"` // LatencyMS is the simulated model latency in milliseconds.
	GOMAXPROCS  int     `json:"gomaxprocs"`       // GOMAXPROCS is runtime.GOMAXPROCS during the run.
	NumCPU      int     `json:"num_cpu"`          // NumCPU is runtime.NumCPU.
	// GC is the garbage collector's setting for the whole process (both
	// phases): the GOGC and GOMEMLIMIT environment variables as the Go
	// runtime read them ("" when unset: GOGC 100, no memory limit).
	GOGC       string    `json:"gogc"`
	GOMEMLIMIT string    `json:"gomemlimit"` // GOMEMLIMIT is the GOMEMLIMIT environment variable.
	StartedAt  time.Time `json:"started_at"` // StartedAt is when the run started.
	// Phases in the order they ran.
	Phases []*Phase `json:"phases"`
	// Ratios of the framework's figures to the baselines' (throughput
	// mode): invocations/s and steady invocations/s.
	Ratios map[string]float64 `json:"ratios,omitempty"`
	// RoundRatios are the framework/minimal throughput ratios of each
	// round (--rounds), in order; Ratios["framework/minimal"] is then
	// their median, and RoundCPURatios the same for CPU per invocation.
	RoundRatios    []float64 `json:"round_ratios,omitempty"`
	RoundCPURatios []float64 `json:"round_cpu_ratios,omitempty"` // RoundCPURatios: see RoundRatios.
	// RoundCeilingRatios are the framework/minimal ratios of each round's
	// CPU ceilings (Phase.CPUCeilingPerSecond: the CPU of all three
	// processes), and Ratios["framework/minimal (CPU ceiling)"] their
	// median: the throughput ratio a machine bound by its CPU gives.
	RoundCeilingRatios []float64 `json:"round_ceiling_ratios,omitempty"`
	// Rounds is the number of rounds asked for (--rounds); when fewer
	// complete (minimal, framework) pairs ran, the framework/minimal
	// ratios are not computed.
	Rounds int `json:"rounds,omitempty"`
	// Bound is the Little's-law bound of the in-flight mode, inflight / (3
	// × latency) per second, and BoundRatio the framework's steady rate
	// against it.
	Bound      float64 `json:"littles_law_bound_per_s,omitempty"`
	BoundRatio float64 `json:"bound_ratio,omitempty"` // BoundRatio is the steady rate over Bound.
	// Goals says which goals were met. A goal that rests on a phase that
	// failed (Phase.Failed) is false, with the reason in NotComputed.
	Goals map[string]bool `json:"goals,omitempty"`
	// NotComputed names the ratios and goals left out (a ratio) or not
	// met (a goal) because a phase they rest on failed, each with the
	// reason ("n/a (phase minimal failed)"): a phase that did not complete
	// every invocation measured something else than the workload, so
	// nothing is compared with it.
	NotComputed map[string]string `json:"not_computed,omitempty"`
}

// phase returns the named phase or nil.
func (r *Report) phase(name string) *Phase {
	for _, p := range r.Phases {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// finish marks the phases that failed (Phase.Failed; Run sets it from
// its checks, finish from the counts when it is not set) and computes the
// ratios and goals from the phases that did not: a ratio that rests on a
// failed phase is not computed and a goal that does is NOT MET, each
// listed in NotComputed with the reason (found in review, nineteenth
// session: a minimal phase that lost half of its invocations made
// framework/minimal larger and the goal "MET").
func (r *Report) finish(inflight int, latency time.Duration) {
	for _, p := range r.Phases {
		if p.Failed == "" {
			p.Failed = phaseFailure(p, r.N)
		}
	}
	fw := r.phase("framework")
	if fw == nil {
		return
	}
	r.Goals = map[string]bool{}
	r.Ratios = map[string]float64{}
	r.NotComputed = map[string]string{}
	for _, b := range []string{"bare", "minimal"} {
		bp := r.phase(b)
		if bp == nil {
			continue
		}
		if why := failedPhases(fw, bp); why != "" {
			r.NotComputed["framework/"+b] = why
			r.NotComputed["framework/"+b+" (steady)"] = why
			continue
		}
		if bp.PerSecond > 0 {
			r.Ratios["framework/"+b] = fw.PerSecond / bp.PerSecond
			if bp.SteadyPerSecond > 0 {
				r.Ratios["framework/"+b+" (steady)"] = fw.SteadyPerSecond / bp.SteadyPerSecond
			}
		}
	}
	if mp := r.phase("minimal"); mp != nil && fw.CPUMSPerInvocation > 0 && failedPhases(fw, mp) == "" {
		// CPU per invocation of the minimal consumer over the framework's
		// (this process only): the throughput ratio a CPU-bound machine
		// would see, less exposed to the noise of a shared one.
		r.Ratios["framework/minimal (CPU per invocation)"] = mp.CPUMSPerInvocation / fw.CPUMSPerInvocation
	}
	for _, p := range r.Phases {
		if p.TotalCPUMSPerInvocation > 0 && r.NumCPU > 0 {
			p.CPUCeilingPerSecond = float64(r.NumCPU) * 1000 / p.TotalCPUMSPerInvocation
		}
	}
	r.roundRatios()
	const minimalGoal = ">= 0.8 of the minimal worker"
	if why, ok := r.NotComputed["framework/minimal"]; ok {
		r.Goals[minimalGoal] = false
		r.NotComputed["goal "+minimalGoal] = why
	} else if v, ok := r.Ratios["framework/minimal"]; ok {
		r.Goals[minimalGoal] = v >= 0.8
	}
	if inflight > 0 && latency > 0 {
		r.Bound = float64(inflight) / (3 * latency.Seconds())
		for _, p := range r.Phases {
			if p.Name != "bare" && p.Failed == "" {
				p.BoundRatio = p.SteadyPerSecond / r.Bound
				p.CeilingBoundRatio = p.CPUCeilingPerSecond / r.Bound
			}
		}
		inflightGoal := fmt.Sprintf("%d in flight at >= 0.6 of the bound", inflight)
		const rssGoal = "<= 1 GiB RSS"
		if why := failedPhases(fw); why != "" {
			// The framework phase did not run its workload: its rate and
			// its peak RSS are not the workload's.
			r.Goals[inflightGoal], r.Goals[rssGoal] = false, false
			r.NotComputed["bound ratio"] = why
			r.NotComputed["goal "+inflightGoal], r.NotComputed["goal "+rssGoal] = why, why
		} else {
			r.BoundRatio = fw.SteadyPerSecond / r.Bound
			r.Goals[inflightGoal] = r.BoundRatio >= 0.6 && fw.WorkerMaxInFlight >= inflight*9/10
			// The worker's own peak when it is a process; in process the
			// whole process's, the load generator's side included.
			rss := fw.PeakRSSBytes
			if fw.WorkerPeakRSSBytes > 0 {
				rss = fw.WorkerPeakRSSBytes
			}
			r.Goals[rssGoal] = rss > 0 && rss <= 1<<30
		}
	}
	if len(r.Ratios) == 0 {
		r.Ratios = nil
	}
	if len(r.NotComputed) == 0 {
		r.NotComputed = nil
	}
}

// phaseFailure says why p did not do all of its work (n invocations, each
// completed, no refund duplicated), or "" when it did. Run sets
// Phase.Failed from its own checks first (the refund records compared with
// the completed invocations too); this is the part the counts tell.
func phaseFailure(p *Phase, n int) string {
	var why []string
	if n > 0 && p.Completed < n {
		why = append(why, fmt.Sprintf("%d of %d invocations completed", p.Completed, n))
	}
	if p.Lost > 0 {
		why = append(why, fmt.Sprintf("%d without a result", p.Lost))
	}
	if len(p.Other) > 0 {
		why = append(why, fmt.Sprintf("other statuses %v", p.Other))
	}
	if p.DuplicateRefunds > 0 {
		why = append(why, fmt.Sprintf("%d duplicated refunds", p.DuplicateRefunds))
	}
	return strings.Join(why, ", ")
}

// failedPhases returns "n/a (phase a, b failed)" naming those of ps that
// failed, or "" when none did.
func failedPhases(ps ...*Phase) string {
	var names []string
	for _, p := range ps {
		if p != nil && p.Failed != "" {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "n/a (phase " + strings.Join(names, ", ") + " failed)"
}

// Print writes the report as a table.
func (r *Report) Print(out io.Writer) {
	fmt.Fprintf(out, "\nagentfleet loadgen — %s, mode %s\n", r.Provider, r.Mode)
	where := ""
	if r.Processes {
		where = " (framework: processes)"
	}
	fmt.Fprintf(out, "NATS %s (CPU: %s)   stores %s   n=%d per phase   workers=%d%s × concurrency=%d   window=%d   model latency=%v   GOMAXPROCS=%d%s\n\n",
		r.NATS, orNotMeasured(r.NATSCPU), r.Stores, r.N, r.Workers, where, r.Concurrency, r.Window, time.Duration(r.LatencyMS*float64(time.Millisecond)), r.GOMAXPROCS, gcSetting(r))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tcompleted\tlost\tother\tinv/s\tsteady inv/s\tp50 ms\tp99 ms\tpeak RSS MiB\tCPU ms/inv\tRedis CPU ms/inv\tNATS CPU ms/inv\tRedis reads/inv\tRedis cmds/inv\tallocs/inv\tKiB alloc/inv\twrite calls/inv\tread calls/inv\tmax in flight\trefunds\tdup refunds\t")
	for _, p := range r.Phases {
		other := 0
		for _, c := range p.Other {
			other += c
		}
		refunds, dups := fmt.Sprint(p.Refunds), fmt.Sprint(p.DuplicateRefunds)
		if p.Name == "bare" {
			refunds, dups = "-", "-"
		}
		inflight := fmt.Sprint(p.MaxInFlight)
		if p.WorkerMaxInFlight > 0 {
			inflight += fmt.Sprintf(" (worker %d)", p.WorkerMaxInFlight)
		}
		allocs, kib := fmt.Sprintf("%.0f", p.AllocsPerInvocation), fmt.Sprintf("%.1f", p.AllocKiBPerInvocation)
		writes, reads := fmt.Sprintf("%.1f", p.WritesPerInvocation), fmt.Sprintf("%.1f", p.ReadsPerInvocation)
		if p.WritesPerInvocation == 0 {
			writes, reads = "-", "-"
		}
		cpu := fmt.Sprintf("%.2f", p.CPUMSPerInvocation)
		rss := fmt.Sprintf("%.0f", float64(p.PeakRSSBytes)/(1<<20))
		if p.WorkerPeakRSSBytes > 0 {
			rss += fmt.Sprintf(" (workers %.0f)", float64(p.WorkerPeakRSSBytes)/(1<<20))
		}
		if len(p.WorkerPIDs) > 0 {
			allocs, kib = "-", "-" // the worker processes' heap is not ours
			cpu += fmt.Sprintf(" (workers %.2f)", p.WorkerCPUMSPerInvocation)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%.0f\t%.1f\t%.1f\t%s\t%s\t%.2f\t%.2f\t%.1f\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", p.Name, p.Completed, p.Lost, other,
			p.PerSecond, p.SteadyPerSecond, p.P50MS, p.P99MS, rss,
			cpu, p.RedisCPUMSPerInvocation, p.NATSCPUMSPerInvocation,
			p.RedisReadsPerInvocation, p.RedisCommandsPerInvocation, allocs, kib, writes, reads, inflight, refunds, dups)
	}
	_ = tw.Flush()
	for _, p := range r.Phases {
		fmt.Fprintf(out, "  %-9s %s (RSS: %s)\n", p.Name+":", p.Description, p.RSSSource)
	}
	for _, p := range r.Phases {
		if p.Failed != "" {
			fmt.Fprintf(out, "PHASE FAILED %s: %s (no ratio or goal rests on it)\n", p.Name, p.Failed)
		}
	}
	ratioNames := []string{"framework/bare", "framework/minimal", "framework/bare (steady)", "framework/minimal (steady)", "framework/minimal (CPU per invocation)", "framework/minimal (CPU ceiling)"}
	notComputed := false
	for _, k := range ratioNames {
		_, na := r.NotComputed[k]
		notComputed = notComputed || na
	}
	if len(r.Ratios) > 0 || notComputed {
		fmt.Fprintln(out)
		rounds := len(r.RoundRatios) > 1
		for _, k := range ratioNames {
			if v, ok := r.Ratios[k]; ok {
				label := k
				if rounds && k != "framework/minimal" && k != "framework/minimal (CPU per invocation)" && k != "framework/minimal (CPU ceiling)" {
					label += " [round 1]"
				}
				fmt.Fprintf(out, "ratio %-40s %.2f\n", label, v)
			} else if why, ok := r.NotComputed[k]; ok {
				fmt.Fprintf(out, "ratio %-40s %s\n", k, why)
			}
		}
		if rounds {
			fmt.Fprintf(out, "framework/minimal by round (median above): %s\n", fmtRatios(r.RoundRatios))
			if len(r.RoundCPURatios) > 1 {
				fmt.Fprintf(out, "  by CPU per invocation (median above):    %s\n", fmtRatios(r.RoundCPURatios))
			}
			if len(r.RoundCeilingRatios) > 1 {
				fmt.Fprintf(out, "  by CPU ceiling (median above):           %s\n", fmtRatios(r.RoundCeilingRatios))
			}
		}
	}
	if r.Bound > 0 {
		// ofBound is a phase's ratio to the bound, or why there is none.
		ofBound := func(p *Phase, v float64) string {
			if why := failedPhases(p); why != "" {
				return why
			}
			return fmt.Sprintf("%.2f", v)
		}
		fmt.Fprintf(out, "\nLittle's-law bound: %d in flight / (3 × %v) = %.0f inv/s; framework steady rate = %s of the bound",
			r.Workers*r.Concurrency, time.Duration(r.LatencyMS*float64(time.Millisecond)), r.Bound, ofBound(r.phase("framework"), r.BoundRatio))
		if mp := r.phase("minimal"); mp != nil {
			fmt.Fprintf(out, " (minimal consumer: %s)", ofBound(mp, mp.BoundRatio))
		}
		fmt.Fprintln(out)
		for _, name := range []string{"framework", "minimal"} {
			if p := r.phase(name); p != nil && p.CPUCeilingPerSecond > 0 {
				fmt.Fprintf(out, "CPU ceiling, %-10s %d cores / %.2f ms CPU per invocation (process + Redis + NATS) = %.0f inv/s = %s of the bound\n",
					name+":", r.NumCPU, p.TotalCPUMSPerInvocation, p.CPUCeilingPerSecond, ofBound(p, p.CeilingBoundRatio))
			}
		}
	}
	for _, g := range slices.Sorted(maps.Keys(r.Goals)) {
		ok := r.Goals[g]
		mark := "MET"
		if !ok {
			mark = "NOT MET"
		}
		if why, na := r.NotComputed["goal "+g]; na {
			mark += ": " + why
		}
		fmt.Fprintf(out, "goal %-40s %s\n", g, mark)
	}
}

// roundRatios fills RoundRatios and RoundCPURatios from the phase pairs
// (minimal, framework), (minimal_r2, framework_r2), … and, with more than
// one round, makes their medians the framework/minimal ratios. When a
// minimal or framework phase of any round failed, a pair's framework phase
// included or not (a run stopped after a round's minimal phase), or fewer
// pairs ran than the rounds asked for (Rounds), none of them is computed
// (a median over the rounds that passed would still claim the run): the
// framework/minimal ratios go to NotComputed, including the first
// round's. Found in review, twenty-second session: a round 2 whose
// minimal phase failed, its framework phase never run, was skipped and
// the goal claimed from round 1 alone.
func (r *Report) roundRatios() {
	var pairs [][2]*Phase
	for k := 1; ; k++ {
		mName, fName := roundNames(k)
		mp, fp := r.phase(mName), r.phase(fName)
		if mp == nil || fp == nil {
			break
		}
		pairs = append(pairs, [2]*Phase{mp, fp})
	}
	var all []*Phase
	for _, p := range r.Phases {
		if strings.HasPrefix(p.Name, "minimal") || strings.HasPrefix(p.Name, "framework") {
			all = append(all, p)
		}
	}
	why := failedPhases(all...)
	if why == "" && len(pairs) > 0 && r.Rounds > len(pairs) {
		why = fmt.Sprintf("n/a (%d of %d rounds ran)", len(pairs), r.Rounds)
	}
	if why != "" {
		for _, k := range []string{"framework/minimal", "framework/minimal (steady)", "framework/minimal (CPU per invocation)", "framework/minimal (CPU ceiling)"} {
			delete(r.Ratios, k)
			r.NotComputed[k] = why
		}
		return
	}
	for _, pr := range pairs {
		mp, fp := pr[0], pr[1]
		if mp.PerSecond > 0 {
			r.RoundRatios = append(r.RoundRatios, fp.PerSecond/mp.PerSecond)
		}
		if fp.CPUMSPerInvocation > 0 {
			r.RoundCPURatios = append(r.RoundCPURatios, mp.CPUMSPerInvocation/fp.CPUMSPerInvocation)
		}
		if fp.CPUCeilingPerSecond > 0 && mp.CPUCeilingPerSecond > 0 {
			r.RoundCeilingRatios = append(r.RoundCeilingRatios, fp.CPUCeilingPerSecond/mp.CPUCeilingPerSecond)
		}
	}
	if len(r.RoundCeilingRatios) > 0 {
		r.Ratios["framework/minimal (CPU ceiling)"] = median(r.RoundCeilingRatios)
	}
	if len(r.RoundRatios) > 1 {
		r.Ratios["framework/minimal"] = median(r.RoundRatios)
	}
	if len(r.RoundCPURatios) > 1 {
		r.Ratios["framework/minimal (CPU per invocation)"] = median(r.RoundCPURatios)
	}
}

func fmtRatios(xs []float64) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(out, " ")
}

// median of xs (not modified).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// WriteJSON writes the report to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("loadgen: write %s: %w", path, err)
	}
	return nil
}

func newReport(cfg Config, e *env) *Report {
	r := &Report{
		Provider: "SIMULATED model provider (pkg/providers/sim, no faults)", Mode: "throughput",
		NATS: config.RedactNATSURL(e.natsURL), N: cfg.N, Workers: cfg.Workers, Processes: cfg.Processes, Concurrency: cfg.Concurrency, Window: cfg.Window,
		Rounds:    cfg.Rounds,
		LatencyMS: ms(cfg.Latency), GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), StartedAt: time.Now().UTC(),
		GOGC: os.Getenv("GOGC"), GOMEMLIMIT: os.Getenv("GOMEMLIMIT"),
		Stores: "redis", NATSCPU: e.nats.note,
	}
	if cfg.Inflight > 0 {
		r.Mode = "inflight"
	}
	if e.srv != nil {
		r.NATS, r.Stores = "embedded "+config.RedactNATSURL(e.natsURL), "nats-kv"
	} else {
		// Redacted: the report goes to stdout and to the --out file, kept
		// and shared (found in review, twentieth session).
		r.Redis = config.RedactURL(e.redisURL)
	}
	return r
}

// orNotMeasured is s, or "not measured" when empty.
func orNotMeasured(s string) string {
	if s == "" {
		return "not measured"
	}
	return s
}

// gcSetting is the report header's GC part: empty on the runtime's
// defaults, else the environment variables that changed them.
func gcSetting(r *Report) string {
	out := ""
	if r.GOGC != "" {
		out += "   GOGC=" + r.GOGC
	}
	if r.GOMEMLIMIT != "" {
		out += "   GOMEMLIMIT=" + r.GOMEMLIMIT
	}
	return out
}
