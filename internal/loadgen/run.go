package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Run runs the benchmark, prints the table to out and writes the JSON
// report when cfg.Out is set. Worker logs go to logOut. It returns the
// report and an error if an invocation of a minimal or framework phase did
// not complete (no result, or any other status: the benchmark injects no
// faults), or an effect was duplicated, lost or made by an invocation that
// did not complete; timings never make it fail. The report marks such a
// phase (Phase.Failed) and rests no ratio or goal on it.
func Run(ctx context.Context, cfg Config, out, logOut io.Writer) (rep *Report, err error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e, err := openEnv(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := e.close(ctx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	rep = newReport(cfg, e)
	fmt.Fprintf(out, "agentfleet loadgen: %s; run %s; %d invocations per phase\n", rep.Provider, e.run, cfg.N)
	if cfg.Processes {
		dir, err := os.MkdirTemp("", "agentfleet-loadgen-bin-")
		if err != nil {
			return nil, fmt.Errorf("loadgen: %w", err)
		}
		defer os.RemoveAll(dir)
		if cfg.workerBin, err = workerBinary(ctx, cfg, dir, out); err != nil {
			return nil, err
		}
	}
	type phase struct {
		name string
		fn   func(context.Context, *env, Config) (*Phase, error)
	}
	phases := []phase{{"bare", runBare}}
	for r := 1; r <= cfg.Rounds; r++ {
		mName, fName := roundNames(r)
		rcfg := cfg
		if r > 1 {
			rcfg.CPUProfile, rcfg.MemProfile, rcfg.MinimalCPUProfile = "", "", "" // profiles: the first round's
		}
		phases = append(phases,
			phase{mName, func(ctx context.Context, e *env, _ Config) (*Phase, error) { return runMinimal(ctx, e, rcfg, mName) }},
			phase{fName, func(ctx context.Context, e *env, _ Config) (*Phase, error) {
				return runFramework(ctx, e, rcfg, logOut, fName)
			}})
	}
	var errs []error
	for _, ph := range phases {
		if cfg.SkipBaselines && !strings.HasPrefix(ph.name, "framework") {
			continue
		}
		fmt.Fprintf(out, "  running %s ...\n", ph.name)
		p, perr := ph.fn(ctx, e, cfg)
		if p != nil {
			rep.Phases = append(rep.Phases, p)
			var perrs []error
			if p.DuplicateRefunds > 0 {
				perrs = append(perrs, fmt.Errorf("loadgen: %s: %d duplicated refunds", p.Name, p.DuplicateRefunds))
			}
			if !strings.HasPrefix(p.Name, "bare") {
				perrs = append(perrs, checkPhase(p, cfg)...)
			}
			if perr != nil {
				perrs = append(perrs, perr)
			}
			// The report says the phase failed, and rests no ratio or
			// goal on it (Report.finish).
			p.Failed = joinErrors(perrs)
			errs = append(errs, perrs...)
		} else if perr != nil {
			errs = append(errs, perr)
		}
		if perr != nil && (p == nil || ctx.Err() != nil) {
			break
		}
	}
	rep.finish(cfg.Inflight, cfg.Latency)
	rep.Print(out)
	if cfg.Out != "" {
		if werr := rep.WriteJSON(cfg.Out); werr != nil {
			errs = append(errs, werr)
		} else {
			fmt.Fprintf(out, "\nwrote %s\n", cfg.Out)
		}
	}
	return rep, errors.Join(errs...)
}

// roundNames returns the names of round r's minimal and framework phases:
// "minimal" and "framework" for the first, "minimal_r2" and "framework_r2"
// for the second, and so on.
func roundNames(r int) (minimal, framework string) {
	if r == 1 {
		return "minimal", "framework"
	}
	return fmt.Sprintf("minimal_r%d", r), fmt.Sprintf("framework_r%d", r)
}

// checkPhase checks a minimal or framework phase's outcome. The benchmark
// runs without faults, so every invocation must complete: found in review,
// eighteenth session, a phase whose invocations all ended dead_lettered
// (counted under Other, no result missing) made Run return nil. With the
// order pool (a window of at most maxOrders) every invocation refunds an
// order of its own, so the refund records are compared with the completed
// invocations as sets, not only counted: each completed invocation has
// exactly one record, and no record belongs to one that did not complete.
func checkPhase(p *Phase, cfg Config) []error {
	var errs []error
	if p.Completed < cfg.N {
		errs = append(errs, fmt.Errorf("loadgen: %s: %d of %d invocations completed (submitted %d, no result %d, other statuses %v)",
			p.Name, p.Completed, cfg.N, p.Submitted, p.Lost, p.Other))
	}
	if cfg.Window > maxOrders {
		return errs
	}
	var missing, repeated, stray []string
	for id := range p.completedIDs {
		switch n := p.refundsByID[id]; {
		case n == 0:
			missing = append(missing, id)
		case n > 1:
			repeated = append(repeated, fmt.Sprintf("%s ×%d", id, n))
		}
	}
	for id := range p.refundsByID {
		if !p.completedIDs[id] {
			stray = append(stray, id)
		}
	}
	if len(missing)+len(repeated)+len(stray) > 0 {
		errs = append(errs, fmt.Errorf("loadgen: %s: %d refund records for %d completed invocations: "+
			"%d completed without a refund%s, %d refunded more than once%s, %d refunded without completing%s",
			p.Name, p.Refunds, p.Completed, len(missing), examples(missing), len(repeated), examples(repeated), len(stray), examples(stray)))
	}
	return errs
}

// joinErrors returns the errors' texts joined by "; " ("" for none).
func joinErrors(errs []error) string {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// examples returns up to three of ids, sorted, as " (e.g. a, b, c)", or "".
func examples(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	slices.Sort(ids)
	return " (e.g. " + strings.Join(ids[:min(len(ids), 3)], ", ") + ")"
}
