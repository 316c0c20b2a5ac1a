package replayer

import (
	"flag"
	"fmt"
)

// onceString is a string flag that may be given once. flag.FlagSet keeps
// the last of a repeated flag, so "--class SERVER --class TIMEOUT" selected
// TIMEOUT alone and said nothing (left open in the twenty-third session).
// A filter of the replayer takes one value (dlq.Filter, and --force, which
// forces the one class named), so a repeat is a usage error naming both
// values: the command is run once per value.
type onceString struct {
	p    *string
	name string
	set  bool
}

// onceVar defines the string flag name, stored in p, that may be given
// once.
func onceVar(fs *flag.FlagSet, p *string, name, usage string) {
	fs.Var(&onceString{p: p, name: name}, name, usage)
}

// String implements flag.Value.
func (o *onceString) String() string {
	if o.p == nil { // the zero value flag.PrintDefaults makes
		return ""
	}
	return *o.p
}

// Set implements flag.Value.
func (o *onceString) Set(s string) error {
	if o.set {
		return fmt.Errorf("--%s given twice (%q, then %q): it takes one value; run the command once for each", o.name, *o.p, s)
	}
	*o.p, o.set = s, true
	return nil
}
