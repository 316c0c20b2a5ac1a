package loadgen

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTinyEmbeddedLoad runs every phase, the minimal and framework ones in
// two rounds, with 20 invocations on an embedded server and checks counts
// only: all completed, none lost, every framework and minimal invocation
// refunded exactly once (each round's own), and the reported ratio is the
// rounds' median. No timing is asserted.
func TestTinyEmbeddedLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded NATS server and two workers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "results.json")
	profMin, profFw := filepath.Join(t.TempDir(), "minimal.pprof"), filepath.Join(t.TempDir(), "framework.pprof")
	var table strings.Builder
	rep, err := Run(ctx, Config{Embedded: true, N: 20, Workers: 2, Concurrency: 4, Timeout: time.Minute, Out: out, Rounds: 2,
		MinimalCPUProfile: profMin, CPUProfile: profFw}, &table, io.Discard)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, table.String())
	}
	var names []string
	for _, p := range rep.Phases {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, " "); got != "bare minimal framework minimal_r2 framework_r2" {
		t.Fatalf("phases = %s, want bare and two rounds of minimal and framework", got)
	}
	if len(rep.RoundRatios) != 2 || rep.Ratios["framework/minimal"] != (rep.RoundRatios[0]+rep.RoundRatios[1])/2 {
		t.Errorf("round ratios %v, framework/minimal %v: want two rounds and their median", rep.RoundRatios, rep.Ratios["framework/minimal"])
	}
	for _, p := range rep.Phases {
		if p.Submitted != 20 || p.Completed != 20 || p.Lost != 0 || len(p.Other) != 0 {
			t.Errorf("%s: submitted %d completed %d lost %d other %v, want 20/20/0", p.Name, p.Submitted, p.Completed, p.Lost, p.Other)
		}
		if p.AllocsPerInvocation <= 0 || p.AllocKiBPerInvocation <= 0 {
			t.Errorf("%s: %.0f allocs, %.1f KiB per invocation: not measured", p.Name, p.AllocsPerInvocation, p.AllocKiBPerInvocation)
		}
		// Every invocation writes at least its result and reads its
		// request (with --embedded the server's side is this process's
		// too).
		if p.WritesPerInvocation < 1 || p.ReadsPerInvocation < 1 {
			t.Errorf("%s: %.1f write and %.1f read system calls per invocation: not measured", p.Name, p.WritesPerInvocation, p.ReadsPerInvocation)
		}
		if p.Name == "bare" {
			continue
		}
		if p.Refunds != 20 || p.DuplicateRefunds != 0 {
			t.Errorf("%s: refunds %d, duplicated %d; want 20 and 0", p.Name, p.Refunds, p.DuplicateRefunds)
		}
	}
	if !strings.Contains(table.String(), "SIMULATED") || !strings.Contains(table.String(), "framework") {
		t.Errorf("table does not label the provider as simulated:\n%s", table.String())
	}
	if rep.Ratios["framework/minimal"] <= 0 {
		t.Errorf("no framework/minimal ratio: %v", rep.Ratios)
	}
	// Both phases' CPU profiles were written (the first round's).
	for _, f := range []string{profMin, profFw} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("profile %s: %v (empty or missing)", f, err)
		}
	}
}

// A minimal phase's profile needs the minimal phase.
func TestMinimalProfileNeedsTheBaselines(t *testing.T) {
	cfg := Config{SkipBaselines: true, MinimalCPUProfile: "x.pprof"}.WithDefaults()
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--minimal-cpuprofile") {
		t.Fatalf("Validate = %v; want the --minimal-cpuprofile error", err)
	}
}

// TestOrderPoolResetsReusedOrders checks that an order is reset only when
// it is handed out again.
func TestOrderPoolResetsReusedOrders(t *testing.T) {
	var resets []string
	p := newOrderPool(func(_ context.Context, id string) error { resets = append(resets, id); return nil })
	ctx := context.Background()
	for range maxOrders {
		i, err := p.take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p.put(i)
	}
	if len(resets) != 0 {
		t.Fatalf("reset before reuse: %v", resets)
	}
	i, err := p.take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(resets) != 1 || resets[0] != orderID(i) {
		t.Fatalf("resets = %v, want [%s]", resets, orderID(i))
	}
}

func TestPercentile(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if got := pct(d, 50); got != 5 {
		t.Errorf("p50 = %v", got)
	}
	if got := pct(d, 99); got != 10 {
		t.Errorf("p99 = %v", got)
	}
	if got := pct(nil, 50); got != 0 {
		t.Errorf("p50 of nothing = %v", got)
	}
}

// BenchmarkEmbedded runs b.N invocations per phase on an embedded server
// (no services needed) and reports each phase's rate and the framework's
// ratio to the minimal consumer. It measures; it never fails on a figure.
//
//	go test -run '^$' -bench Embedded -benchtime 500x ./internal/loadgen
func BenchmarkEmbedded(b *testing.B) {
	ctx := context.Background()
	rep, err := Run(ctx, Config{Embedded: true, N: b.N, Workers: 2, Concurrency: 16}, io.Discard, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range rep.Phases {
		b.ReportMetric(p.PerSecond, p.Name+"-inv/s")
	}
	b.ReportMetric(rep.Ratios["framework/minimal"], "framework/minimal")
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{0.7}, 0.7},
		{[]float64{0.9, 0.5}, 0.7},
		{[]float64{0.8, 0.6, 0.7}, 0.7},
		{[]float64{0.4, 0.9, 0.6, 0.8}, 0.7},
	} {
		in := append([]float64(nil), c.in...)
		if got := median(c.in); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("median(%v) = %v, want %v", in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("median reordered its input: %v", c.in)
			}
		}
	}
}

// TestReportNamesTheGCSetting: a run under GOGC or GOMEMLIMIT says so in
// its header and JSON, since both phases' figures depend on it.
func TestReportNamesTheGCSetting(t *testing.T) {
	var def, tuned strings.Builder
	(&Report{}).Print(&def)
	if strings.Contains(def.String(), "GOGC") || strings.Contains(def.String(), "GOMEMLIMIT") {
		t.Errorf("a run on the runtime's defaults names a GC setting:\n%s", def.String())
	}
	(&Report{GOGC: "off", GOMEMLIMIT: "900MiB"}).Print(&tuned)
	if !strings.Contains(tuned.String(), "GOGC=off   GOMEMLIMIT=900MiB") {
		t.Errorf("header does not name GOGC=off GOMEMLIMIT=900MiB:\n%s", tuned.String())
	}
}
