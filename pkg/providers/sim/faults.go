package sim

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// FaultClass names one kind of simulated failure.
type FaultClass string

// The fault classes the simulator can inject. Thrown faults come back as a
// *model.ProviderError; in-band faults as an ordinary response carrying a
// bad finish reason.
const (
	// FaultRateLimited throws HTTP 429 RESOURCE_EXHAUSTED with a RetryAfter hint.
	FaultRateLimited FaultClass = "rate_limited"
	// FaultQuota throws HTTP 429 RESOURCE_EXHAUSTED with QuotaExhausted set.
	FaultQuota FaultClass = "quota"
	// FaultServer throws HTTP 503 UNAVAILABLE.
	FaultServer FaultClass = "server"
	// FaultTimeout throws an error wrapping context.DeadlineExceeded.
	FaultTimeout FaultClass = "timeout"
	// FaultTransport throws an error wrapping io.ErrUnexpectedEOF or a
	// connection reset (ECONNRESET); in a stream, after the first partial.
	FaultTransport FaultClass = "transport"
	// FaultOutputBlocked answers in-band: finish SAFETY, no content,
	// ErrorCode SAFETY.
	FaultOutputBlocked FaultClass = "output_blocked"
	// FaultTruncated answers in-band: finish MAX_TOKENS with partial text.
	FaultTruncated FaultClass = "truncated"
	// FaultMalformedFunctionCall answers in-band: finish and ErrorCode
	// MALFORMED_FUNCTION_CALL, no content.
	FaultMalformedFunctionCall FaultClass = "malformed_function_call"
)

// FaultClasses lists every class in the fixed order used for the per-call
// draw (so a seed gives the same sequence on every run).
var FaultClasses = []FaultClass{
	FaultRateLimited, FaultQuota, FaultServer, FaultTimeout, FaultTransport,
	FaultOutputBlocked, FaultTruncated, FaultMalformedFunctionCall,
}

func classIndex(c FaultClass) int {
	for i, k := range FaultClasses {
		if k == c {
			return i
		}
	}
	return -1
}

// Faults maps a fault class to the probability that a call fails that way.
// At most one fault is injected per call, so the probabilities must sum to
// at most 1.
type Faults map[FaultClass]float64

// Validate reports an unknown class, a probability outside [0, 1], or a sum
// above 1.
func (f Faults) Validate() error {
	sum := 0.0
	for c, p := range f {
		if classIndex(c) < 0 {
			return fmt.Errorf("sim: unknown fault class %q (known: %s)", c, knownClasses())
		}
		if math.IsNaN(p) || p < 0 || p > 1 {
			return fmt.Errorf("sim: fault %s: probability %v is not in [0, 1]", c, p)
		}
		sum += p
	}
	if sum > 1+1e-9 {
		return fmt.Errorf("sim: fault probabilities sum to %v, more than 1", sum)
	}
	return nil
}

// String returns the compact spec form ParseFaults reads, classes in
// FaultClasses order, zero probabilities left out ("" for none).
func (f Faults) String() string {
	var parts []string
	for _, c := range FaultClasses {
		if p := f[c]; p > 0 {
			parts = append(parts, string(c)+"="+strconv.FormatFloat(p, 'g', -1, 64))
		}
	}
	return strings.Join(parts, ",")
}

// ParseFaults reads a compact fault spec such as
// "rate_limited=0.2,server=0.2" (spaces allowed; "" or "none" means no
// faults) and validates it. It is meant for flags and config strings.
func ParseFaults(spec string) (Faults, error) {
	f := Faults{}
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "none" {
		return f, nil
	}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, val, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("sim: fault spec %q: want class=probability", item)
		}
		c := FaultClass(strings.TrimSpace(name))
		if classIndex(c) < 0 {
			return nil, fmt.Errorf("sim: fault spec: unknown class %q (known: %s)", c, knownClasses())
		}
		if _, dup := f[c]; dup {
			return nil, fmt.Errorf("sim: fault spec: class %q given twice", c)
		}
		p, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return nil, fmt.Errorf("sim: fault spec: %s: %w", c, err)
		}
		f[c] = p
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f, nil
}

func knownClasses() string {
	names := make([]string, len(FaultClasses))
	for i, c := range FaultClasses {
		names[i] = string(c)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// ErrSimulated is wrapped by every thrown fault of this package, whatever
// its class, so a simulated failure is recognisable in logs and tests
// (errors.Is(err, ErrSimulated)).
var ErrSimulated = errors.New("simulated fault")
