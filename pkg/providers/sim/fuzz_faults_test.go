package sim

import (
	"math"
	"reflect"
	"testing"
)

// FuzzParseFaults: a fault spec from a flag or AGENTFLEET_MODEL_SIM_FAULTS
// never panics the parser; it is refused or gives faults that validate,
// whose String form parses to the same faults (zero probabilities left
// out).
func FuzzParseFaults(f *testing.F) {
	for _, s := range []string{
		"", "none", " rate_limited=0.2, server=0.2 ,malformed_function_call=0.05", "server=1", "server=0",
		"server=-0", "server=NaN", "server=0x1p-2", "server=1e-400", "quota=0.5,quota=0.1", "timeout",
		"transport=0.3333333333333333,output_blocked=0.3333333333333333,truncated=0.3333333333333334",
		"server=1.0000000001", ",,,", "=", "server==0.1", "Server=0.1", "server=+.5",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		faults, err := ParseFaults(spec)
		if err != nil {
			if faults != nil {
				t.Fatalf("faults and an error: %v, %v", faults, err)
			}
			return
		}
		if verr := faults.Validate(); verr != nil {
			t.Fatalf("ParseFaults(%q) accepted faults that do not validate: %v", spec, verr)
		}
		for c, p := range faults {
			if math.IsNaN(p) || p < 0 || p > 1 || classIndex(c) < 0 {
				t.Fatalf("ParseFaults(%q): %s=%v", spec, c, p)
			}
		}
		s := faults.String()
		again, err := ParseFaults(s)
		if err != nil {
			t.Fatalf("ParseFaults(%q).String() = %q does not parse: %v", spec, s, err)
		}
		want := Faults{}
		for c, p := range faults {
			if p > 0 {
				want[c] = p
			}
		}
		if !reflect.DeepEqual(again, want) {
			t.Fatalf("ParseFaults(%q) = %v; its String %q parses to %v", spec, faults, s, again)
		}
		if again.String() != s {
			t.Fatalf("String not stable: %q then %q", s, again.String())
		}
	})
}
