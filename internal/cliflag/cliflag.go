// Package cliflag holds the flag-parsing helpers the command-line tools
// (producer, dlq-replayer) share.
package cliflag

import "flag"

// ParseInterspersed parses fs over args allowing flags after positional
// arguments (flag.FlagSet alone stops at the first one). Everything after
// "--" is positional. It returns the positional arguments in order.
func ParseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
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
