// Regression (left open in the twenty-third session, fixed in the twenty-fourth): the
// simulated provider used one seed in every worker: a model built without
// a seed (Config.Seed 0, and model.sim.seed defaulted to 1) seeded its
// random source with that same constant, so every worker of a fleet (in
// one process or many) drew the same fault sequence and failed in step at
// the same call counts, which no real provider does and which hides what
// a chaos run is meant to show (one worker failing while the others
// carry on). A model without a seed now draws its own, reported by
// Config so the run can be repeated; an explicit seed still means exactly
// that seed.
package sim

import (
	"errors"
	"reflect"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// draws records what each of n calls of m ended with: the provider
// error's status, or the finish reason of its answer.
func draws(t *testing.T, m *Model, n int) []string {
	t.Helper()
	req := &model.Request{Contents: []*model.Content{user("refund A-1042")}}
	var out []string
	for i := 0; i < n; i++ {
		rs, err := call(t, m, req, false)
		var pe *model.ProviderError
		switch {
		case errors.As(err, &pe):
			out = append(out, pe.Status)
		case err != nil:
			t.Fatal(err)
		default:
			out = append(out, string(rs[len(rs)-1].FinishReason))
		}
	}
	return out
}

// TestModelsWithoutASeedDrawTheirOwnFaults: two models built alike without
// a seed (two workers of a fleet) draw different fault sequences.
func TestModelsWithoutASeedDrawTheirOwnFaults(t *testing.T) {
	cfg := Config{Faults: Faults{FaultServer: 0.5}}
	a, b := newSim(t, cfg), newSim(t, cfg)
	if a.Config().Seed == 0 || b.Config().Seed == 0 {
		t.Fatalf("seeds reported %d and %d: a model without a seed reports 0, not the seed it drew", a.Config().Seed, b.Config().Seed)
	}
	// 128 draws at one half: the same sequence by chance is 2^-128.
	da, db := draws(t, a, 128), draws(t, b, 128)
	if reflect.DeepEqual(da, db) {
		t.Fatalf("two models without a seed drew the same 128 faults (seeds %d and %d): every worker fails in step", a.Config().Seed, b.Config().Seed)
	}
}

// TestADrawnSeedRerunsTheSequence: the seed a model reports, given to a
// new model, draws the same faults (a chaos run is repeated from its
// log); an explicit seed is kept as given.
func TestADrawnSeedRerunsTheSequence(t *testing.T) {
	first := newSim(t, Config{Faults: Faults{FaultServer: 0.5}})
	seed := first.Config().Seed
	again := newSim(t, Config{Seed: seed, Faults: Faults{FaultServer: 0.5}})
	if got := again.Config().Seed; got != seed {
		t.Fatalf("Config().Seed = %d for an explicit seed %d", got, seed)
	}
	if a, b := draws(t, first, 64), draws(t, again, 64); !reflect.DeepEqual(a, b) {
		t.Fatalf("seed %d reported, yet a model given it drew other faults:\n%v\n%v", seed, a, b)
	}
	for _, s := range []uint64{1, 42} {
		x, y := newSim(t, Config{Seed: s, Faults: Faults{FaultServer: 0.5}}), newSim(t, Config{Seed: s, Faults: Faults{FaultServer: 0.5}})
		if a, b := draws(t, x, 64), draws(t, y, 64); !reflect.DeepEqual(a, b) {
			t.Fatalf("explicit seed %d: two models drew different faults", s)
		}
	}
}
