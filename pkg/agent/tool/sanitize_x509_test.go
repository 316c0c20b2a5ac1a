package tool_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, twenty-first session): the host names in
// Go's certificate errors, which stand without a port or URL around them,
// are redacted (the DLQ reason, the invocation record and the model saw
// them as they were).
func TestSanitizeRedactsX509HostNames(t *testing.T) {
	for _, tc := range []struct {
		in    string
		hosts []string
	}{
		{`tls: failed to verify certificate: x509: certificate is valid for ingress.acme-edge.net, not llm-gw.prod.acme-corp.net`,
			[]string{"acme-edge", "acme-corp"}},
		{`model: Post "https://llm-gw.prod.acme-corp.net/v1/chat": tls: failed to verify certificate: x509: certificate is valid for ingress.acme-edge.net, llm-gw-old.acme-corp.net, not llm-gw.prod.acme-corp.net`,
			[]string{"acme-edge", "acme-corp"}},
		{`x509: certificate is valid for *.acme.io, acme.io, not x.y.z`, []string{"acme", "x.y.z"}},
		{`x509: certificate is valid for orders-db, localhost, not payments-db`, []string{"orders-db", "localhost", "payments-db"}},
		{`x509: certificate is valid for db.internal, ingress.acme-edge.net, not x.acme.io`, []string{"db.internal", "acme-edge", "acme.io"}},
		{`x509: certificate is valid for 10.0.0.7, fd00:10:96::7, not 10.0.0.8`, []string{"10.0.0", "fd00"}},
		{`x509: certificate is not valid for any names, but wanted to match host.example.com`, []string{"example"}},
		{`x509: certificate is valid for 120 names, but none matched orders.acme-corp.net`, []string{"acme-corp"}},
		{`x509: cannot validate certificate for 10.0.0.7 because it doesn't contain any IP SANs`, []string{"10.0.0.7"}},
		{`x509: certificate signed by unknown authority (possibly because of "crypto/rsa: verification error" while trying to verify candidate authority certificate "Acme Corp Internal CA")`,
			[]string{"Acme Corp"}},
		{`x509: a root or intermediate certificate is not authorized to sign for this name: DNS name "orders.acme-corp.net" is excluded by constraint "acme-corp.net"`,
			[]string{"acme-corp"}},
		{`x509: a root or intermediate certificate is not authorized to sign for this name: DNS name "orders.acme.io" is not permitted by any constraint`,
			[]string{"acme.io"}},
		{realHostnameError(t, []string{"ingress.acme-edge.net", "*.acme-cdn.io"}, "llm-gw.prod.acme-corp.net"),
			[]string{"acme-edge", "acme-cdn", "acme-corp"}},
		{realHostnameError(t, nil, "llm-gw.prod.acme-corp.net"), []string{"acme-corp"}},
	} {
		got := tool.SanitizeString(tc.in)
		for _, h := range tc.hosts {
			if strings.Contains(got, h) {
				t.Errorf("SanitizeString(%q) = %q: %q leaks", tc.in, got, h)
			}
		}
		if again := tool.SanitizeString(got); again != got {
			t.Errorf("SanitizeString not idempotent on %q: %q, then %q", tc.in, got, again)
		}
	}

	// What the model reads: Go's words, the count, and the text after
	// the host stay.
	for in, want := range map[string]string{
		"tls: failed to verify certificate: x509: certificate is valid for a.acme.io, b.acme.io, not c.acme.io (attempt 3 of 3)": "tls: failed to verify certificate: x509: certificate is valid for [redacted], [redacted], not [redacted] (attempt 3 of 3)",
		"x509: certificate is valid for a.acme.io, not c.acme.io, giving up":                                                     "x509: certificate is valid for [redacted], not [redacted], giving up",
		"x509: certificate is valid for a.acme.io, not c.acme.io.":                                                               "x509: certificate is valid for [redacted], not [redacted].",
		"x509: certificate is valid for 120 names, but none matched c.acme.io":                                                   "x509: certificate is valid for 120 names, but none matched [redacted]",
		`verify candidate authority certificate "Acme Root") failed`:                                                             "verify candidate authority certificate [redacted]) failed",
	} {
		if got := tool.SanitizeString(in); got != want {
			t.Errorf("SanitizeString(%q)\n = %q\nwant %q", in, got, want)
		}
	}

	// Only Go's wording: other text about certificates and servers is
	// left as it is (a bare host after "server " is not redacted either:
	// "server overloaded", "server config.yaml" would be).
	for _, in := range []string{
		"the certificate is valid for one year, not two",
		"certificate is valid for 90 days",
		"x509: certificate has expired or is not yet valid: current time 2026-01-02T00:00:00Z is after 2025-12-31T00:00:00Z",
		"nats: timeout; server overloaded, try again",
		"we tried 3 warehouses but none matched your order",
	} {
		if got := tool.SanitizeString(in); got != in {
			t.Errorf("SanitizeString(%q) = %q, want it unchanged", in, got)
		}
	}
}

// realHostnameError is the text crypto/x509 itself gives for a
// certificate valid for names (none if names is nil) verified for host.
func realHostnameError(t *testing.T, names []string, host string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "leaf"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     names,
		IPAddresses:  []net.IP{net.ParseIP("10.0.0.9")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	err = cert.VerifyHostname(host)
	if err == nil {
		t.Fatalf("certificate for %v verified for %s", names, host)
	}
	return "tls: failed to verify certificate: " + err.Error()
}
