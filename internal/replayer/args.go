package replayer

import (
	"context"
	"flag"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// optString is a string flag that remembers whether it was given.
type optString struct {
	v   string
	set bool
}

// String implements flag.Value.
func (o *optString) String() string { return o.v }

// Set implements flag.Value.
func (o *optString) Set(s string) error { o.v, o.set = s, true; return nil }

// common are the flags every command takes.
type common struct {
	config   string
	natsURL  optString
	redisURL optString
	asJSON   bool
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", c.config, "YAML configuration (configs/dlq-replayer.yaml documents every key); env AGENTFLEET_REPLAYER_CONFIG")
	fs.Var(&c.natsURL, "nats-url", "NATS server URL (default nats://127.0.0.1:4222; env AGENTFLEET_NATS_URL)")
	fs.Var(&c.redisURL, "redis-url", "Redis URL (env AGENTFLEET_REDIS_URL; empty: NATS KV stores)")
	fs.BoolVar(&c.asJSON, "json", c.asJSON, "print JSON instead of tables")
}

// filterFlags are the entry filters.
type filterFlags struct {
	class, agent, since, until, invocation string
}

func (f *filterFlags) register(fs *flag.FlagSet) {
	onceVar(fs, &f.class, "class", "only entries of this failure `class` (e.g. SERVER; a class the taxonomy does not know is a usage error unless the DLQ or parked stream holds entries of it)")
	onceVar(fs, &f.agent, "agent", "only entries of this `agent`")
	onceVar(fs, &f.since, "since", "only entries stored at or after: RFC 3339 `time` or a duration ago (2h)")
	onceVar(fs, &f.until, "until", "only entries stored before: RFC 3339 `time` or a duration ago")
	onceVar(fs, &f.invocation, "invocation", "only the entries of this invocation `id`")
}

// filter converts the flags to a dlq.Filter.
func (f *filterFlags) filter(now time.Time) (dlq.Filter, error) {
	out := dlq.Filter{Class: strings.ToUpper(f.class), Agent: f.agent, InvocationID: f.invocation}
	for _, tok := range []string{out.Class, out.Agent} {
		if tok != "" && !envelope.ValidID(tok) {
			return out, usagef("filter %q is not a single name ([A-Za-z0-9_-])", tok)
		}
	}
	if out.Class != "" && !taxonomy.Class(out.Class).Valid() && !className.MatchString(out.Class) {
		// A mistyped class (QUOTA for QUOTA_EXHAUSTED) selects nothing, and
		// replay refused it as a class that needs a person, recommending
		// --force (found in review, nineteenth session). A well-formed one
		// may be a newer worker's: Fleet.checkClass decides.
		return out, unknownClass(out.Class, "")
	}
	if out.InvocationID != "" && !envelope.ValidID(out.InvocationID) {
		return out, usagef("--invocation %q is not a valid invocation id", out.InvocationID)
	}
	var err error
	if out.Since, err = parseWhen(f.since, now); err != nil {
		return out, usagef("--since: %v", err)
	}
	if out.Until, err = parseWhen(f.until, now); err != nil {
		return out, usagef("--until: %v", err)
	}
	if !out.Since.IsZero() && !out.Until.IsZero() && !out.Since.Before(out.Until) {
		// Since <= t < Until holds for no entry: the walk selected nothing
		// and said so only as an empty table (left open in the
		// twenty-third session). "--since 1h --until 2h" is the likely
		// slip: a duration counts back from now.
		return out, usagef("--since %s (%s) is not before --until %s (%s): no entry is stored in between; --since is the earlier time (of two durations, the longer)",
			f.since, out.Since.UTC().Format(time.RFC3339), f.until, out.Until.UTC().Format(time.RFC3339))
	}
	return out, nil
}

// className is the form of a failure class: the taxonomy's, and those of
// newer workers (the entry keeps the class a plain string so that old
// replayers read new classes).
var className = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// checkClass refuses a --class (filter.Class, upper case) the taxonomy
// does not know, as a usage error naming the likely class meant (exit 3),
// unless the DLQ or the parked stream holds entries of it: a class written
// by a newer worker, which stats shows, must be selectable like any other
// (found in review, twenty-second session). A class the taxonomy knows,
// and no class, pass without a look at the streams.
func (f *Fleet) checkClass(ctx context.Context, class string) error {
	if class == "" || taxonomy.Class(class).Valid() {
		return nil
	}
	readers := []*dlq.Reader{f.Reader}
	if ok, err := f.Parked.Exists(ctx); err != nil {
		return fmt.Errorf("parked stream: %w", err)
	} else if ok {
		readers = append(readers, f.Parked.Reader())
	}
	for _, r := range readers {
		for it, err := range r.List(ctx, dlq.Filter{Class: class}) {
			if it == nil {
				return fmt.Errorf("--class %s: %w", class, err)
			}
			return nil // the first entry of the class is enough
		}
	}
	return unknownClass(class, "; no entry of the DLQ or the parked stream has it")
}

// unknownClass is the usage error for a --class the taxonomy does not know
// (and, as note says, no entry has), naming the class likely meant.
func unknownClass(class, note string) error {
	hint := ""
	if s := likelyClass(class); s != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", s)
	}
	return usagef("--class %q: unknown failure class%s%s; the classes are %s", class, hint, note, classNames())
}

// likelyClass returns the taxonomy's class that class (upper case) likely
// misspells, or "": the only one it begins (QUOTA), or the nearest within
// an edit distance of 2 (SERVR).
func likelyClass(class string) string {
	var prefixed []string
	best, bestD := "", 3
	for _, c := range taxonomy.Classes() {
		name := string(c)
		if strings.HasPrefix(name, class) {
			prefixed = append(prefixed, name)
		}
		if d := config.EditDistance(class, name); d < bestD {
			best, bestD = name, d
		}
	}
	if best == "" && len(prefixed) == 1 {
		return prefixed[0]
	}
	return best
}

// classNames lists the taxonomy's failure classes, for a usage error.
func classNames() string {
	var names []string
	for _, c := range taxonomy.Classes() {
		names = append(names, string(c))
	}
	return strings.Join(names, ", ")
}

// parseWhen reads an RFC 3339 time or a duration before now ("" is zero).
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a positive duration", s)
	}
	return now.Add(-d), nil
}
