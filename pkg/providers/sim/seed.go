package sim

import "math/rand/v2"

// NewSeed returns a random non-zero seed, drawn from the process's
// randomly seeded source: what New uses when Config.Seed is 0, so that
// every model (every worker of a fleet, in one process or many) draws its
// own faults. A fixed seed made every worker draw the same fault sequence
// (left open in the twenty-third session): faults struck the whole fleet
// at the same call counts, which no real provider does. It is never 0, so
// a seed reported by Model.Config reruns the same sequence when set.
//
// It is below 2^53, so the seed the worker logs reads back exactly through
// tools that hold JSON numbers as float64 (jq 1.6, JavaScript, log
// stores): a larger one came back as another seed (found in review,
// twenty-fourth session).
func NewSeed() uint64 {
	return rand.Uint64N(1<<53-1) + 1
}
