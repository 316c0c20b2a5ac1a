package producercli

import (
	"flag"
	"fmt"
	"strings"
)

// parseInterspersed parses fs over args allowing flags after positional
// arguments (flag.FlagSet stops at the first one). Everything after "--" is
// positional. It returns the positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

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
