package tool

import (
	"regexp"
	"strings"
)

// The host names in crypto/x509's verification errors, which name them
// without a port or a URL around them (no other host pattern sees them).
// Each pattern is anchored on Go's own wording, so a sentence such as "the
// certificate is valid for one year" keeps its words; a general pattern
// for a bare dotted name would take "config.yaml" and "v1.2.3" too (found
// in review, twenty-first session).
var (
	// x509ValidForRE: the start of HostnameError's list ("x509:
	// certificate is valid for ingress.acme-edge.net, *.acme.io, not
	// llm-gw.prod.acme-corp.net"); redactX509ValidFor redacts the names
	// after it.
	x509ValidForRE = regexp.MustCompile(`(?i)\bx509: certificate is valid for\s+`)
	// x509NameRE: one name of that list, or the host asked for: up to a
	// space, a comma or a quote or bracket around it, not ending in a "."
	// or ":" (a sentence's or a wrapping error's). "[redacted]" is one too,
	// so a name another pattern redacted does not end the list.
	x509NameRE = regexp.MustCompile(`^[^\s,;()<>"'\x60]*[^\s,;()<>"'\x60.:]`)
	// x509ListSepRE: the separator of the list's names, and the one
	// before the host asked for.
	x509ListSepRE = regexp.MustCompile(`^,\s+`)
	x509NotRE     = regexp.MustCompile(`(?i)^not\s+`)
	// x509HostRE: the one host in HostnameError's other shapes ("x509:
	// certificate is valid for 120 names, but none matched a.example",
	// "... is not valid for any names, but wanted to match a.example",
	// "x509: cannot validate certificate for 10.0.0.7 because ...").
	x509HostRE = regexp.MustCompile(`(?i)(\bx509: certificate is valid for \d+ (?:ip sans|names), but none matched\s+|\bx509: certificate is not valid for any names, but wanted to match\s+|\bx509: cannot validate certificate for\s+)[^\s,;()<>"'\x60]*[^\s,;()<>"'\x60.:]`)
	// x509QuotedRE: a quoted name after UnknownAuthorityError's "while
	// trying to verify candidate authority certificate" (a CA's common
	// name or organisation) or a name constraint's "is excluded by
	// constraint" (a domain); an unterminated one (cut before it reached
	// here) runs to the end.
	x509QuotedRE = regexp.MustCompile(`(?i)(\bcandidate authority certificate\s+|\bis excluded by constraint\s+)"(?:[^"\\]|\\.)*"?`)
	// x509ConstraintRE: the name a CA's name constraints refuse ("DNS name
	// \"orders.acme-corp.net\" is not permitted by any constraint").
	x509ConstraintRE = regexp.MustCompile(`(?i)(\b(?:dns name|email address|uri|ip address)\s+)"(?:[^"\\]|\\.)*"(\s+is\s+(?:not permitted by any|excluded by) constraint\b)`)
)

// x509Words: every match of the x509 patterns above contains one of them,
// ignoring ASCII case.
var x509Words = []string{"x509", "constraint", "candidate authority"}

// redactX509 redacts the host names of crypto/x509's errors in s.
func redactX509(s string) string {
	s = redactX509ValidFor(s)
	s = x509HostRE.ReplaceAllString(s, "${1}"+redacted)
	s = x509QuotedRE.ReplaceAllString(s, "${1}"+redacted)
	return x509ConstraintRE.ReplaceAllString(s, "${1}"+redacted+"${2}")
}

// redactX509ValidFor redacts the names after each x509ValidForRE match:
// the names the certificate is valid for, separated by ", ", and the host
// asked for after ", not ". A count ("valid for 120 names, but none
// matched ...") is x509HostRE's and kept.
func redactX509ValidFor(s string) string {
	idx := x509ValidForRE.FindAllStringIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range idx {
		if m[0] < last {
			continue // among the names of the one before
		}
		b.WriteString(s[last:m[1]])
		last = m[1]
		if n := x509NameRE.FindString(s[last:]); n == "" || strings.Trim(n, "0123456789") == "" {
			continue
		}
		last += writeX509Names(&b, s[last:])
	}
	b.WriteString(s[last:])
	return b.String()
}

// writeX509Names writes to b the list of names at the start of t, each
// redacted, and returns how much of t it took: names separated by ", ",
// up to one after ", not " (the host asked for, the list's end).
func writeX509Names(b *strings.Builder, t string) int {
	i := 0
	for {
		n := len(x509NameRE.FindString(t[i:]))
		if n == 0 {
			return i
		}
		b.WriteString(redacted)
		i += n
		sep := len(x509ListSepRE.FindString(t[i:]))
		if sep == 0 {
			return i
		}
		rest := t[i+sep:]
		if not := len(x509NotRE.FindString(rest)); not > 0 {
			if h := len(x509NameRE.FindString(rest[not:])); h > 0 {
				b.WriteString(t[i : i+sep+not])
				b.WriteString(redacted)
				return i + sep + not + h
			}
		}
		if x509NameRE.FindString(rest) == "" {
			return i
		}
		b.WriteString(t[i : i+sep])
		i += sep
	}
}
