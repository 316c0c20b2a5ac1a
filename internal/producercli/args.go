package producercli

import (
	"fmt"
	"strings"
)

// kvFlag collects repeated key=value flags.
type kvFlag map[string]string

// String implements flag.Value.
func (k kvFlag) String() string {
	var parts []string
	for key, v := range k {
		parts = append(parts, key+"="+v)
	}
	return strings.Join(parts, ",")
}

// Set implements flag.Value.
func (k kvFlag) Set(s string) error {
	key, v, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	k[key] = v
	return nil
}
