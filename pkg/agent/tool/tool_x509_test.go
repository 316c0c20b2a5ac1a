package tool_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// x509TestCert makes a certificate for tmpl signed by parent/parentKey (self
// signed when parent is nil) and returns it parsed, with its key.
func x509TestCert(t *testing.T, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

// Regression (found in review, twenty-first session): a certificate's SAN
// in FQDN form or with a space in it no longer ends HostnameError's list,
// so the names after it and the host asked for are redacted too.
//
// Go (CreateCertificate, ParseCertificate, VerifyHostname) takes a SAN in
// FQDN form ("gw.acme-corp.net.") or with a space in it, and HostnameError
// lists it as it is. The list was read name by name as a host's
// characters, which stopped before a trailing "." (and at a space), the
// ", " separator was then not found, and the list ended there.
func TestSanitizeX509ListWithFQDNNameLeaksTheRest(t *testing.T) {
	for _, sans := range [][]string{
		{"gw.acme-corp.net.", "api.acme-corp.net"},
		{"gw acme-edge.net", "api.acme-corp.net"},
	} {
		leaf, _ := x509TestCert(t, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "leaf"}, DNSNames: sans}, nil, nil)
		err := leaf.VerifyHostname("llm-gw.prod.acme-corp.net")
		if err == nil {
			t.Fatal("verified")
		}
		in := "tls: failed to verify certificate: " + err.Error()
		got := tool.SanitizeString(in)
		for _, h := range []string{"acme-corp", "acme-edge"} {
			if strings.Contains(got, h) {
				t.Errorf("SanitizeString(%q)\n = %q: %q leaks", in, got, h)
			}
		}
	}
}

// Regression (found in review, twenty-first session): the name in Go
// 1.26's "x509: cannot parse dnsName \"…\"" (and rfc822Name) is redacted.
//
// Go 1.26's name-constraint check refuses a leaf SAN it cannot parse
// (a dNSName in FQDN form) with "x509: cannot parse dnsName %q" (and
// rfc822Name for a mailbox); none of the x509 patterns covered that wording.
// Verify without a DNSName is what a TLS server does with a client
// certificate (mTLS), and a VerifyConnection/VerifyPeerCertificate hook.
func TestSanitizeX509CannotParseNameLeaks(t *testing.T) {
	ca, caKey := x509TestCert(t, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Root"},
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
		PermittedDNSDomains: []string{"acme-corp.net"}}, nil, nil)
	leaf, _ := x509TestCert(t, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "leaf"},
		DNSNames: []string{"gw.acme-corp.net."}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, caKey)
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err == nil {
		t.Fatal("verified")
	}
	for _, in := range []string{
		"tls: failed to verify certificate: " + err.Error(),
		`x509: a root or intermediate certificate is not authorized to sign for this name: x509: cannot parse rfc822Name "ops@acme-corp.net"`,
	} {
		if got := tool.SanitizeString(in); strings.Contains(got, "acme-corp") {
			t.Errorf("SanitizeString(%q)\n = %q: the host name leaks", in, got)
		}
	}
}

// Regression (found in review, twenty-first session): HostnameError's list
// is redacted name by name up to the ", not " before the host asked for,
// whatever a name holds, and to the end when the text was cut inside it;
// the other x509 wordings that quote a SAN are redacted too (a URI's to the
// end: urlRE, which runs first, takes its closing quote with it).
func TestSanitizeX509ListShapes(t *testing.T) {
	for in, want := range map[string]string{
		"x509: certificate is valid for gw.acme-corp.net., api.acme-corp.net, not llm-gw.acme-corp.net.":         "x509: certificate is valid for [redacted], [redacted], not [redacted].",
		"x509: certificate is valid for gw acme-edge.net, *.acme.io, not h.acme.io (attempt 2 of 3), not again":  "x509: certificate is valid for [redacted], [redacted], not [redacted] (attempt 2 of 3), not again",
		"x509: certificate is valid for gw acme-edge.net, api.acme-co":                                           "x509: certificate is valid for [redacted], [redacted]",
		"x509: certificate is valid for a.acme.io,b.acme.io, not c.acme.io: giving up":                           "x509: certificate is valid for [redacted], not [redacted]: giving up",
		"x509: certificate is valid for 3 IP SANs, but none matched 10.0.0.8":                                    "x509: certificate is valid for 3 IP SANs, but none matched [redacted]",
		`x509: cannot parse URI "https://ops:pw@acme-corp.net/x": invalid domain`:                                "x509: cannot parse URI [redacted]",
		`x509: internal error: URI SAN "spiffe://acme-corp.net/w" failed to parse`:                               "x509: internal error: URI SAN [redacted]",
		`x509: not authorized to sign for this name: URI with IP ("https://acme-corp.net/") cannot be matched`:   "x509: not authorized to sign for this name: URI with IP ([redacted]",
		`x509: not authorized to sign for this name: cannot parse URI host "acme-corp.net:1:2": too many colons`: "x509: not authorized to sign for this name: cannot parse URI host [redacted]: too many colons",
	} {
		got := tool.SanitizeString(in)
		if got != want {
			t.Errorf("SanitizeString(%q)\n = %q\nwant %q", in, got, want)
		}
		if again := tool.SanitizeString(got); again != got {
			t.Errorf("SanitizeString not idempotent on %q: %q, then %q", in, got, again)
		}
	}
}
