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
// loses the hosts before that token's that hold no user info of their
// own, the price of not leaking. Blank
// parts are never marked (they hold nothing) but do not break the chain.
func commaCutParts(parts []string) []bool {
	cut := make([]bool, len(parts))
	chain := false // a later part, through scheme-less parts, ends a secret
	end := ""      // the user info of the part that ends the chain
	for i := len(parts) - 1; i >= 0; i-- {
		p := strings.TrimSpace(parts[i])
		// A part holding the same user info as the part that ends the
		// chain is a server of a list that repeats its credentials
		// ("nats://app:pw@n1:4222,app:pw@n2:4222": redactListPart hides
		// that user info), not a password's piece (found in review,
		// twenty-fourth session: every host of such a list but the last
		// was hidden). Another '@' may be a password's own
		// ("nats://admin:pa@ss,Winter@host").
		cut[i] = chain && p != "" && (end == "" || userInfo(p) != end)
		if strings.Contains(p, "://") {
			chain, end = false, "" // a part with a scheme starts a URL
		} else if strings.Contains(p, "@") {
			if !chain {
				end = userInfo(p)
			}
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

// userInfo returns what a list part holds between its "://" (if any) and
// its last '@', or "" when it holds no '@'.
func userInfo(p string) string {
	at := strings.LastIndex(p, "@")
	if at < 0 {
		return ""
	}
	p = p[:at]
	if i := strings.Index(p, "://"); i >= 0 {
		p = p[i+3:]
	}
	return p
}
