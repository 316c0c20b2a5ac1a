// Package natsversion compares the version a NATS server reports
// (nats.Conn.ConnectedServerVersion) with the first one that fixed a
// server behaviour the fleet relies on. The comparison is semantic
// versioning's (golang.org/x/mod/semver): a pre-release comes before its
// release ("2.9.18-RC.1" is older than "2.9.18").
package natsversion

import (
	"strings"

	"golang.org/x/mod/semver"
)

// AtLeast reports whether server version v (e.g. "2.9.10", "v2.11.0-RC.1")
// is min ("2.9.18") or later. known is false when v is not a version of
// three numbers (no connection gives "", a development build may give
// "dev"): the caller decides what an unknown version means for it.
func AtLeast(v, min string) (atLeast, known bool) {
	v = strings.TrimPrefix(v, "v")
	core, _, _ := strings.Cut(v, "-")
	core, _, _ = strings.Cut(core, "+")
	if strings.Count(core, ".") != 2 || !semver.IsValid("v"+v) {
		return false, false
	}
	return semver.Compare("v"+v, "v"+strings.TrimPrefix(min, "v")) >= 0, true
}
