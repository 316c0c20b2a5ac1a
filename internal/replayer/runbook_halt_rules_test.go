package replayer

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

func repoText(t *testing.T, rel string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The halt rules the runbook's "DLQ growth" says AgentfleetDLQReplayHalted
// names, and the alert's description lists.
func documentedHaltRules(t *testing.T) (runbook, alert []string) {
	t.Helper()
	flat := strings.Join(strings.Fields(repoText(t, "docs/runbook.md")), " ")
	i := strings.Index(flat, "`AgentfleetDLQReplayHalted` names the halt's `rule`:")
	if i < 0 {
		t.Fatal("the runbook's DLQ growth no longer names the halt rules: update this test")
	}
	sec := flat[i:]
	if j := strings.Index(sec, "### Bad input"); j > 0 {
		sec = sec[:j]
	}
	for _, m := range regexp.MustCompile("`([a-z-]+)`").FindAllStringSubmatch(sec, -1) {
		runbook = append(runbook, m[1])
	}
	y := repoText(t, "configs/prometheus/alerts.yaml")
	k := strings.Index(y, "alert: AgentfleetDLQReplayHalted")
	d := regexp.MustCompile(`description: "([^"]*)"`).FindStringSubmatch(y[k:])
	for _, r := range []string{RuleAutoHalt, RuleCanary, RuleStores, RuleRetention, RuleRefusedClass, RuleConfirmation} {
		if strings.Contains(d[1], r+" (") || strings.Contains(d[1], r+" or") {
			alert = append(alert, r)
		}
	}
	return runbook, alert
}

// The drain is the only process that serves agentfleet_dlq_replayer_halts_total
// (NewMetrics is called by runDrain alone; replay has no /metrics). Its only
// Execute is drainPass's: does it run a canary?
func drainRunsACanary(t *testing.T) bool {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(filepath.Dir(file), "drain.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	canary, lits := false, 0
	ast.Inspect(f, func(n ast.Node) bool {
		cl, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		if id, ok := cl.Type.(*ast.Ident); !ok || id.Name != "ExecOptions" {
			return true
		}
		lits++
		for _, e := range cl.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Canary" {
					canary = true
				}
			}
		}
		return true
	})
	if lits == 0 {
		t.Fatal("drain.go builds no ExecOptions any more: update this test")
	}
	return canary
}

// Regression (found in review, twenty-first session): the runbook and
// the alert name only halt rules the drain counts. the runbook's "DLQ growth" and
// the alert's description say AgentfleetDLQReplayHalted names the rules
// auto-halt, canary, stores and retention. The alert reads
// agentfleet_dlq_replayer_halts_total, which only drain serves; a drain
// never runs a canary, and a drain whose fleet has the retention problem
// exits (exit 2) before it registers its metrics: neither rule can ever be
// the alert's.
func TestHaltRulesNamedAreOnesTheDrainCounts(t *testing.T) {
	runbook, alert := documentedHaltRules(t)
	t.Logf("runbook names %v; alert names %v", runbook, alert)
	named := map[string]bool{}
	for _, r := range append(runbook, alert...) {
		named[r] = true
	}

	if named[RuleCanary] && !drainRunsACanary(t) {
		t.Errorf("the runbook (DLQ growth) and the alert say AgentfleetDLQReplayHalted can name rule %q, but the drain, the only "+
			"process serving agentfleet_dlq_replayer_halts_total, never runs a canary (drainPass's ExecOptions has no Canary)", RuleCanary)
	}

	if named[RuleRetention] {
		x := newFx(t, false)
		ctx := ctxT(t)
		x.seed("srv", 1, "SERVER", 0)
		// The fleet keeps dead letters far longer than its idempotency bucket keeps records.
		x.setDLQMaxAge(ctx, 3650*24*time.Hour)
		dctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		var o, e syncBuf
		code := x.runBuf(dctx, nil, &o, &e, "drain", "--metrics-addr", "127.0.0.1:0")
		served := strings.Contains(e.String(), "serving /metrics")
		t.Logf("drain: exit %d, stderr:\n%s", code, e.String())
		if !strings.Contains(e.String(), "halted (retention)") {
			t.Fatalf("test premise: the drain did not meet the retention problem")
		}
		if !served || dctx.Err() == nil {
			t.Errorf("the runbook (DLQ growth) and the alert say AgentfleetDLQReplayHalted can name rule %q, but a drain with that problem "+
				"exits %d at start-up (served /metrics: %v): agentfleet_dlq_replayer_halts_total{rule=%q} is never counted, the alert never fires",
				RuleRetention, code, served, RuleRetention)
		}
	}
}

// "Before you start": with the retention problem, show prints a
// "WARNING: replay safety:" line and show --json lists it under problems;
// replay stops with exit 2 and "halted (retention): ".
func TestBeforeYouStartRetentionInShow(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("srv", 1, "SERVER", 0)
	x.setDLQMaxAge(ctx, 3650*24*time.Hour)
	out := x.run(ctx, nil, "show", "srv-0")
	t.Logf("show: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	contains(t, out.stdout, "WARNING: replay safety: halted (retention)")
	js := x.run(ctx, nil, "show", "srv-0", "--json")
	contains(t, js.stdout, `"problems"`, "replay safety: halted (retention)")
	rp := x.run(ctx, nil, "replay", "--yes")
	if rp.code != 2 || !strings.Contains(rp.stderr, "halted (retention): ") {
		t.Errorf("replay: exit %d, %s", rp.code, rp.stderr)
	}
}
