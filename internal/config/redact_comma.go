package config

import "strings"

// commaCutParts reports, for each part of a comma-separated server list
// split as nats.go splits it (at every comma), whether the part may be
// the start or a middle of a password or token that holds a comma rather
// than a server: one followed, through parts without a scheme, by a part
// without a scheme that holds an '@'. "nats://admin:2024,Winter@host" is,
// to nats.go, the server admin at port 2024 and the token Winter at host;
// to whoever wrote it, the password "2024,Winter". The two readings cannot
// be told apart, so such a part is redacted whole (its scheme kept) and no
// piece of the password is printed (left open in the twenty-second
// session: the first part parsed as a valid URL, so a numeric first half
// was printed). Every part of a list whose servers each name their scheme
// ("nats://u:p@h1:4222,nats://h2:4222") keeps its host; a list whose later
// servers carry a token without a scheme ("nats://h1:4222,tok@h2:4222")
// loses the hosts before that token's, the price of not leaking. Blank
// parts are never marked (they hold nothing) but do not break the chain.
func commaCutParts(parts []string) []bool {
	cut := make([]bool, len(parts))
	chain := false // a later part, through scheme-less parts, ends a secret
	for i := len(parts) - 1; i >= 0; i-- {
		p := strings.TrimSpace(parts[i])
		cut[i] = chain && p != ""
		if strings.Contains(p, "://") {
			chain = false // a part with a scheme starts a URL
		} else if strings.Contains(p, "@") {
			chain = true
		}
	}
	return cut
}

// hideListPart is what a list part commaCutParts (or a part that does not
// parse) is printed as: its scheme, if any, and REDACTED.
func hideListPart(p string) string {
	if i := strings.Index(p, "://"); i >= 0 {
		return p[:i+3] + redacted
	}
	return redacted
}
