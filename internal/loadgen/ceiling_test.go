package loadgen

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestCPUCeiling: the ceiling is the machine's cores over the CPU an
// invocation used in all three processes, and in the in-flight mode that
// ceiling over the Little's-law bound; a phase without the servers' CPU
// has none, and the table prints the ceiling of the phases that have one.
func TestCPUCeiling(t *testing.T) {
	fw := &Phase{Name: "framework", SteadyPerSecond: 2000, TotalCPUMSPerInvocation: 0.8}
	mn := &Phase{Name: "minimal", SteadyPerSecond: 2500, TotalCPUMSPerInvocation: 0.5}
	bare := &Phase{Name: "bare", SteadyPerSecond: 9000, CPUMSPerInvocation: 0.1} // no server CPU measured: no total
	r := &Report{NumCPU: 2, Workers: 1, Concurrency: 4000, LatencyMS: 200, Phases: []*Phase{bare, mn, fw}}
	r.finish(4000, 200*time.Millisecond)

	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	// 2 cores × 1000 ms / 0.8 ms = 2500 inv/s; the bound 4000 / 0.6 s.
	if !near(fw.CPUCeilingPerSecond, 2500) || !near(mn.CPUCeilingPerSecond, 4000) {
		t.Errorf("ceilings framework %v, minimal %v; want 2500 and 4000", fw.CPUCeilingPerSecond, mn.CPUCeilingPerSecond)
	}
	bound := 4000 / 0.6
	if !near(fw.CeilingBoundRatio, 2500/bound) || !near(mn.CeilingBoundRatio, 4000/bound) {
		t.Errorf("ceiling/bound framework %v, minimal %v; want %v and %v", fw.CeilingBoundRatio, mn.CeilingBoundRatio, 2500/bound, 4000/bound)
	}
	if bare.CPUCeilingPerSecond != 0 || bare.CeilingBoundRatio != 0 {
		t.Errorf("bare has no server CPU measured, yet a ceiling %v (%v of the bound)", bare.CPUCeilingPerSecond, bare.CeilingBoundRatio)
	}
	var out strings.Builder
	r.Print(&out)
	for _, want := range []string{
		"CPU ceiling, framework: 2 cores / 0.80 ms CPU per invocation (process + Redis + NATS) = 2500 inv/s = 0.38 of the bound",
		"CPU ceiling, minimal:   2 cores / 0.50 ms CPU per invocation (process + Redis + NATS) = 4000 inv/s = 0.60 of the bound",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// TestCeilingRatioByRound: the ceiling ratio is framework over minimal per
// round, and its median over the rounds.
func TestCeilingRatioByRound(t *testing.T) {
	r := &Report{NumCPU: 2, Phases: []*Phase{
		{Name: "minimal", PerSecond: 1, TotalCPUMSPerInvocation: 1.0},
		{Name: "framework", PerSecond: 1, TotalCPUMSPerInvocation: 1.25},
		{Name: "minimal_r2", PerSecond: 1, TotalCPUMSPerInvocation: 1.0},
		{Name: "framework_r2", PerSecond: 1, TotalCPUMSPerInvocation: 2.0},
		{Name: "minimal_r3", PerSecond: 1, TotalCPUMSPerInvocation: 0.9},
		{Name: "framework_r3", PerSecond: 1, TotalCPUMSPerInvocation: 1.0},
	}}
	r.finish(0, 0)
	want := []float64{0.8, 0.5, 0.9}
	if len(r.RoundCeilingRatios) != 3 {
		t.Fatalf("round ceiling ratios %v, want %v", r.RoundCeilingRatios, want)
	}
	for i := range want {
		if math.Abs(r.RoundCeilingRatios[i]-want[i]) > 1e-9 {
			t.Errorf("round %d ceiling ratio %v, want %v", i+1, r.RoundCeilingRatios[i], want[i])
		}
	}
	if got := r.Ratios["framework/minimal (CPU ceiling)"]; math.Abs(got-0.8) > 1e-9 {
		t.Errorf("median ceiling ratio %v, want 0.8", got)
	}
}

// TestTotalCPUNeedsEveryProcess: the total is the sum of the three
// processes' CPU, and none when Redis's or an external NATS server's was
// not measured (a ceiling from part of the work would be too high).
func TestTotalCPUNeedsEveryProcess(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p        Phase
		embedded bool
		want     float64
	}{
		{"all three", Phase{CPUMSPerInvocation: 0.5, RedisCPUMSPerInvocation: 0.2, NATSCPUMSPerInvocation: 0.3}, false, 1.0},
		{"embedded NATS is this process's", Phase{CPUMSPerInvocation: 0.5, RedisCPUMSPerInvocation: 0.2}, true, 0.7},
		{"external NATS not measured", Phase{CPUMSPerInvocation: 0.5, RedisCPUMSPerInvocation: 0.2}, false, 0},
		{"Redis not measured", Phase{CPUMSPerInvocation: 0.5, NATSCPUMSPerInvocation: 0.3}, false, 0},
		{"nothing", Phase{}, true, 0},
	} {
		if got := totalCPU(&tc.p, tc.embedded); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: totalCPU = %v, want %v", tc.name, got, tc.want)
		}
	}
}
