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
	// x509NotSepRE: the separator before the host asked for, which ends
	// HostnameError's list (Go writes the names joined by ", ", then
	// ", not " and the host).
	x509NotSepRE = regexp.MustCompile(`(?i),\s+not\s+`)
	// x509HostRE: the one host in HostnameError's other shapes ("x509:
	// certificate is valid for 120 names, but none matched a.example",
	// "... is not valid for any names, but wanted to match a.example",
	// "x509: cannot validate certificate for 10.0.0.7 because ...").
	x509HostRE = regexp.MustCompile(`(?i)(\bx509: certificate is valid for \d+ (?:ip sans|names), but none matched\s+|\bx509: certificate is not valid for any names, but wanted to match\s+|\bx509: cannot validate certificate for\s+)[^\s,;()<>"'\x60]*[^\s,;()<>"'\x60.:]`)
	// x509QuotedRE: a quoted name after UnknownAuthorityError's "while
	// trying to verify candidate authority certificate" (a CA's common
	// name or organisation), a name constraint's "is excluded by
	// constraint" (a domain), or a SAN the name-constraint check cannot
	// parse (Go 1.26's "x509: cannot parse dnsName \"gw.acme-corp.net.\"",
	// "cannot parse rfc822Name", "cannot parse URI host", the parser's
	// "x509: cannot parse URI", "URI SAN \"…\" failed to parse", "URI with
	// IP (\"…\") cannot be matched against constraints"; found in review,
	// twenty-first session); an unterminated one (cut before it reached
	// here) runs to the end.
	x509QuotedRE = regexp.MustCompile(`(?i)(\bcandidate authority certificate\s+|\bis excluded by constraint\s+|\bcannot parse (?:dnsName|rfc822Name|URI host|URI)\s+|\bURI SAN\s+|\bURI with (?:empty host|IP)\s+\()"(?:[^"\\]|\\.)*"?`)
	// x509ConstraintRE: the name a CA's name constraints refuse ("DNS name
	// \"orders.acme-corp.net\" is not permitted by any constraint").
	x509ConstraintRE = regexp.MustCompile(`(?i)(\b(?:dns name|email address|uri|ip address)\s+)"(?:[^"\\]|\\.)*"(\s+is\s+(?:not permitted by any|excluded by) constraint\b)`)
)

// x509Words: every match of the x509 patterns above contains one of them,
// ignoring ASCII case.
var x509Words = []string{"x509", "constraint", "candidate authority", "cannot parse", "uri san", "uri with"}

// redactX509 redacts the host names of crypto/x509's errors in s.
func redactX509(s string) string {
	s = redactX509ValidFor(s)
	s = x509HostRE.ReplaceAllString(s, "${1}"+redacted)
	s = x509QuotedRE.ReplaceAllString(s, "${1}"+redacted)
	return x509ConstraintRE.ReplaceAllString(s, "${1}"+redacted+"${2}")
}

// redactX509ValidFor redacts the names after each x509ValidForRE match:
// the list of names the certificate is valid for, up to the first ", not "
// after it (to the end of s when there is none: the text was cut inside
// the list), each name redacted whole, and the host asked for after that
// ", not ". A name is whatever lies between two ", ": Go takes a SAN in
// FQDN form ("gw.acme-corp.net.") or with a space in it, and a list read
// name by name as a host's characters ended at such a one, so the names
// after it and the host reached the model (found in review, twenty-first
// session). A count ("valid for 120 names, but none matched ...") is
// x509HostRE's and kept.
//
// The scan is linear in len(s): both patterns are searched once over the
// whole of s, and the list and the host are read byte by byte. (Matching
// an anchored pattern at each name, on the rest of s, took time in the
// length of the rest each time: 0.93 s for a 900 KB list.)
func redactX509ValidFor(s string) string {
	idx := x509ValidForRE.FindAllStringIndex(s, -1)
	if idx == nil {
		return s
	}
	nots := x509NotSepRE.FindAllStringIndex(s, -1)
	var b strings.Builder
	last, k := 0, 0
	for _, m := range idx {
		if m[0] < last {
			continue // among the names of the one before
		}
		b.WriteString(s[last:m[1]])
		last = m[1]
		if x509Count(s[last:]) {
			continue
		}
		for k < len(nots) && nots[k][0] < last {
			k++
		}
		if k == len(nots) {
			writeX509List(&b, s[last:])
			return b.String()
		}
		sep, host := nots[k][0], nots[k][1]
		writeX509List(&b, s[last:sep])
		b.WriteString(s[sep:host])
		last = host
		if n := x509NameLen(s[host:]); n > 0 {
			b.WriteString(redacted)
			last += n
		}
	}
	b.WriteString(s[last:])
	return b.String()
}

// writeX509List writes to b the names of list, separated by ", " (a comma
// and spaces), each but an empty one as "[redacted]", the separators as
// they are.
func writeX509List(b *strings.Builder, list string) {
	start := 0
	for i := 0; i < len(list); i++ {
		if list[i] != ',' || i+1 == len(list) || !isRESpace(list[i+1]) {
			continue
		}
		j := i + 1
		for j < len(list) && isRESpace(list[j]) {
			j++
		}
		if i > start {
			b.WriteString(redacted)
		}
		b.WriteString(list[i:j])
		start = j
		i = j - 1
	}
	if start < len(list) {
		b.WriteString(redacted)
	}
}

// x509NameLen is the length of the host name at the start of t, as
// x509HostRE reads one: up to a space, a comma or a quote or bracket
// around it, without a trailing "." or ":" (a sentence's or a wrapping
// error's).
func x509NameLen(t string) int {
	n := 0
	for n < len(t) && !isRESpace(t[n]) && strings.IndexByte(",;()<>\"'`", t[n]) < 0 {
		n++
	}
	for n > 0 && (t[n-1] == '.' || t[n-1] == ':') {
		n--
	}
	return n
}

// x509Count reports whether t starts with the count of HostnameError's
// other shape ("120 names, but none matched", "3 IP SANs, but ..."),
// ignoring ASCII case.
func x509Count(t string) bool {
	d := 0
	for d < len(t) && t[d] >= '0' && t[d] <= '9' {
		d++
	}
	sp := d
	for sp < len(t) && isRESpace(t[sp]) {
		sp++
	}
	if d == 0 || sp == d {
		return false
	}
	for _, w := range []string{"names", "ip sans"} {
		if len(t)-sp >= len(w) && strings.EqualFold(t[sp:sp+len(w)], w) &&
			(len(t) == sp+len(w) || !isWordByte(t[sp+len(w)])) {
			return true
		}
	}
	return false
}

// isRESpace reports whether c is a space as the patterns' \s sees one.
func isRESpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

// isWordByte reports whether c is a word character as \b sees one.
func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
