package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrUnknownEnv is matched (errors.Is) by the error of CheckEnv: the
// environment holds an AGENTFLEET_ variable that no command of the project
// reads.
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

// CheckEnv reports every variable of environ (KEY=VALUE entries, as
// os.Environ returns them) whose name starts with EnvPrefix and is not one
// of KnownEnvNames, naming it and the closest known name. A configuration
// file refuses an unknown key (LoadFile), so that a typo does not silently
// fall back to a default; the environment must too: with the underscore
// left out of AGENTFLEET_NATS_URL, nats.url stayed empty and the worker ran
// an embedded server of its own, consuming nothing from the fleet's (found
// in review, twentieth session). The commands call it
// at start and exit as for bad configuration. Values are never quoted (a
// variable may hold a password). The error matches ErrUnknownEnv.
func CheckEnv(environ []string) error {
	var known []string // built on the first unknown name
	var errs []error
	seen := map[string]bool{}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) || seen[name] {
			continue
		}
		seen[name] = true
		if known == nil {
			known = KnownEnvNames()
		}
		if _, ok := slices.BinarySearch(known, name); ok {
			continue
		}
		hint := "no key of the worker or the dlq-replayer has this name (configs/worker.yaml and configs/dlq-replayer.yaml list the keys: " +
			"AGENTFLEET_ and the key's path in upper case joined by _)"
		if s := closestName(name, known); s != "" {
			hint = "did you mean " + s + "?"
		}
		errs = append(errs, fmt.Errorf("%w %s: %s", ErrUnknownEnv, name, hint))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("config: %w", errors.Join(errs...))
}

// closestName returns the name of known closest to name (case ignored,
// edit distance of what follows the prefix), or "" when even that one
// differs in more than half of name's characters.
func closestName(name string, known []string) string {
	n := strings.ToUpper(strings.TrimPrefix(name, EnvPrefix))
	best, bestD := "", -1
	for _, k := range known {
		d := editDistance(n, strings.TrimPrefix(k, EnvPrefix))
		if bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	if bestD < 0 || bestD > max(1, len(n)/2) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
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
