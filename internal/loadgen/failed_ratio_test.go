package loadgen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Regression (found in review, nineteenth session): Report.finish computed
// the framework/baseline ratios and declared the
// ">= 0.8 of the minimal worker" goal from whatever phases ran, without
// looking at whether they did their work. A minimal phase that lost half of
// its invocations (each one held a window slot until --timeout, so the
// phase completed fewer invocations per second) makes framework/minimal
// larger, and the table and the JSON report (bench.json, which has no
// field saying the run failed) print "goal >= 0.8 of the minimal worker
// MET"; likewise a framework phase that completed 60 of 100 invocations
// (40 dead-lettered) "meets" the goal. Run returns an error for those
// phases, but the report it prints and writes claims the goal from them.
// Correct: a ratio or a goal is not computed (or the goal is NOT MET) when
// a phase it rests on did not complete every invocation, and the table and
// the JSON report say which phase failed (Phase.Failed, NotComputed).
func TestGoalIsNotMetFromAPhaseThatFailed(t *testing.T) {
	const goal = ">= 0.8 of the minimal worker"
	for _, tc := range []struct {
		name               string
		minimal, framework *Phase
	}{
		{"minimal baseline lost half its invocations",
			&Phase{Name: "minimal", Submitted: 100, Completed: 50, Lost: 50, PerSecond: 500, SteadyPerSecond: 500},
			&Phase{Name: "framework", Submitted: 100, Completed: 100, PerSecond: 450, SteadyPerSecond: 450}},
		{"framework completed 60 of 100",
			&Phase{Name: "minimal", Submitted: 100, Completed: 100, PerSecond: 1000, SteadyPerSecond: 1000},
			&Phase{Name: "framework", Submitted: 100, Completed: 60, Other: map[string]int{"dead_lettered": 40}, PerSecond: 900, SteadyPerSecond: 900}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{N: 100, NumCPU: 2, Phases: []*Phase{
				{Name: "bare", Submitted: 100, Completed: 100, PerSecond: 3000, SteadyPerSecond: 3000},
				tc.minimal, tc.framework,
			}}
			r.finish(0, 0)
			var out strings.Builder
			r.Print(&out) // the table prints "goal >= 0.8 of the minimal worker  MET"
			t.Logf("ratios %v goals %v\n%s", r.Ratios, r.Goals, out.String())
			if r.Goals[goal] {
				t.Errorf("goal %q is MET from framework/minimal = %.2f, with minimal/framework completed %d/%d of %d (lost %d/%d, other %v/%v)",
					goal, r.Ratios["framework/minimal"], tc.minimal.Completed, tc.framework.Completed, r.N,
					tc.minimal.Lost, tc.framework.Lost, tc.minimal.Other, tc.framework.Other)
			}
			if _, ok := r.Ratios["framework/minimal"]; ok {
				t.Errorf("framework/minimal = %.2f is computed from a phase that failed", r.Ratios["framework/minimal"])
			}
			if !strings.Contains(out.String(), "PHASE FAILED") || !strings.Contains(out.String(), "NOT MET: n/a (phase") {
				t.Errorf("the table does not say which phase failed and that the goal rests on it:\n%s", out.String())
			}
			// The JSON report says it too.
			path := filepath.Join(t.TempDir(), "bench.json")
			if err := r.WriteJSON(path); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Phases []struct {
					Name   string `json:"name"`
					Failed string `json:"failed"`
				} `json:"phases"`
				Goals       map[string]bool   `json:"goals"`
				NotComputed map[string]string `json:"not_computed"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			failed := 0
			for _, p := range doc.Phases {
				if p.Failed != "" {
					failed++
				}
			}
			if failed != 1 || doc.Goals[goal] || doc.NotComputed["goal "+goal] == "" {
				t.Errorf("the JSON report does not say the phase failed and the goal is not met from it:\n%s", b)
			}
		})
	}
}
