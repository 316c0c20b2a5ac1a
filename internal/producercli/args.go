package producercli

import (
	"fmt"
	"strings"
)

// kvFlag collects repeated key=value flags, each key once.
type kvFlag map[string]string

// String implements flag.Value.
func (k kvFlag) String() string {
	var parts []string
	for key, v := range k {
		parts = append(parts, key+"="+v)
	}
	return strings.Join(parts, ",")
}

// Set implements flag.Value. A key given twice is refused, as a batch
// line's metadata member given twice is (envelope.CheckJSON): keeping the
// last value sent another request than asked, without a word (found in
// review, twenty-fifth session).
func (k kvFlag) Set(s string) error {
	key, v, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	if old, dup := k[key]; dup {
		return fmt.Errorf("key %q given twice (%q, then %q)", key, old, v)
	}
	k[key] = v
	return nil
}
