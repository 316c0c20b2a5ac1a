package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// ErrUnknownEnv is matched (errors.Is) by the error of CheckEnv: the
// environment holds an AGENTFLEET_ variable that no command of the project
// reads and that likely misspells one that a command reads.
var ErrUnknownEnv = errors.New("unknown environment variable")

// KnownEnvNames returns, sorted, every AGENTFLEET_ variable a command of
// the project reads: the override of every key of the worker's and the
// dlq-replayer's configuration (EnvNames), AGENTFLEET_CONFIG (the worker's
// file) and AGENTFLEET_REPLAYER_CONFIG (the replayer's). The producer reads
// AGENTFLEET_NATS_URL, a worker key. One environment set for a whole
// deployment (worker and replayer) passes CheckEnv in both commands.
func KnownEnvNames() []string {
	names := append(EnvNames(&Worker{}), EnvNames(&Replayer{})...)
	names = append(names, EnvPrefix+"CONFIG", ReplayerConfigEnv)
	slices.Sort(names)
	return slices.Compact(names)
}

// CheckEnv checks the AGENTFLEET_ variables of environ (KEY=VALUE entries,
// as os.Environ returns them) against KnownEnvNames. A configuration file
// refuses an unknown key (LoadFile), so that a typo does not silently fall
// back to a default; the environment must too: with the underscore left out
// of AGENTFLEET_NATS_URL, nats.url stayed empty and the worker ran an
// embedded server of its own, consuming nothing from the fleet's (found in
// review, twentieth session). But the environment is not the operator's
// alone, so an unknown name is refused only when it is a likely typo of a
// known one (LikelyTypo); the error names it with "did you mean" and
// matches ErrUnknownEnv, and the commands exit as for bad configuration.
// Any other unknown name is returned in warnings (one line each, naming it)
// for the command to print at start: a platform or a Helm chart may set
// AGENTFLEET_VERSION. The variables Kubernetes sets for a Service named
// agentfleet or agentfleet-<x> (IsServiceLinkEnv) are neither (found in
// review, twentieth session: refused, they made every pod of such a
// namespace exit at start). Values are never quoted (a variable may hold a
// password).
func CheckEnv(environ []string) (warnings []string, err error) {
	var known []string // built on the first AGENTFLEET_ name
	var errs []error
	names := map[string]bool{}
	var order []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) || names[name] {
			continue
		}
		names[name] = true
		order = append(order, name)
	}
	for _, name := range order {
		if known == nil {
			known = KnownEnvNames()
		}
		if _, ok := slices.BinarySearch(known, name); ok {
			continue
		}
		typo := LikelyTypo(name, known)
		if svc, ok := IsServiceLinkEnv(name); ok && (typo == "" || names[svc+"_SERVICE_HOST"]) {
			// Kubernetes' link to a Service: skipped, unless it is also a
			// likely typo of a key (AGENTFLEET_EMBEDED_PORT) that no
			// Service explains (Kubernetes sets <svc>_SERVICE_HOST with
			// every other variable of a Service).
			continue
		}
		if typo != "" {
			errs = append(errs, fmt.Errorf("%w %s: did you mean %s?", ErrUnknownEnv, name, typo))
			continue
		}
		w := name + ": no command of the project reads this variable; it is ignored"
		if s := closestName(name, known); s != "" {
			w += " (the closest name is " + s + ")"
		} else {
			w += " (configs/worker.yaml and configs/dlq-replayer.yaml list the keys: AGENTFLEET_ and the key's path in upper case joined by _)"
		}
		warnings = append(warnings, w)
	}
	if len(errs) == 0 {
		return warnings, nil
	}
	return warnings, fmt.Errorf("config: %w", errors.Join(errs...))
}

// LikelyTypo returns the name of known that name (an AGENTFLEET_ variable
// not in known) likely misspells, or "": one whose part after EnvPrefix is
// within an edit distance of 2 of name's (case ignored), or has the same
// letters with the underscores left out (AGENTFLEET_NATSURL).
func LikelyTypo(name string, known []string) string {
	n := strings.ToUpper(strings.TrimPrefix(name, EnvPrefix))
	squeezed := strings.ReplaceAll(n, "_", "")
	best, bestD := "", 3
	for _, k := range known {
		kn := strings.TrimPrefix(k, EnvPrefix)
		d := EditDistance(n, kn)
		if squeezed == strings.ReplaceAll(kn, "_", "") {
			d = min(d, 2) // as likely as a slip of two keys
		}
		if d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// serviceLinkEnv matches the names of the variables Kubernetes
// (enableServiceLinks, on by default) gives every pod for each Service of
// its namespace whose name, upper-cased with '-' as '_', is the first
// group: <svc>_SERVICE_HOST, <svc>_SERVICE_PORT, <svc>_SERVICE_PORT_<name>,
// <svc>_PORT, <svc>_PORT_<n>_<proto> and <svc>_PORT_<n>_<proto>_PROTO,
// _PORT or _ADDR.
var serviceLinkEnv = regexp.MustCompile(`^(AGENTFLEET(?:_[A-Z0-9_]*?)?)_(?:SERVICE_HOST|SERVICE_PORT(?:_[A-Z0-9_]+)?|PORT(?:_[0-9]+_(?:TCP|UDP|SCTP)(?:_(?:PROTO|PORT|ADDR))?)?)$`)

// IsServiceLinkEnv reports whether name has the shape of a variable
// Kubernetes sets for a Service (AGENTFLEET_SERVICE_HOST,
// AGENTFLEET_NATS_PORT_4222_TCP_ADDR, ...), and returns that Service's
// prefix (AGENTFLEET, AGENTFLEET_NATS). A key of the project may have
// such a shape (AGENTFLEET_EMBEDDED_PORT): CheckEnv looks at known names
// first.
func IsServiceLinkEnv(name string) (svc string, ok bool) {
	m := serviceLinkEnv.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// closestName returns the name of known closest to name (case ignored,
// edit distance of what follows the prefix), or "" when even that one
// differs in more than half of name's characters.
func closestName(name string, known []string) string {
	n := strings.ToUpper(strings.TrimPrefix(name, EnvPrefix))
	best, bestD := "", -1
	for _, k := range known {
		d := EditDistance(n, strings.TrimPrefix(k, EnvPrefix))
		if bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	if bestD < 0 || bestD > max(1, len(n)/2) {
		return ""
	}
	return best
}

// EditDistance is the Levenshtein distance of a and b (bytes), for the
// "did you mean" of a misspelt name (an environment variable here, a
// failure class in the replayer).
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
