package taxonomy_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// flakySigner is a server private key held in an HSM / cloud KMS whose
// first `fail` signatures fail (the key service is overloaded or briefly
// unreachable), then recover.
type flakySigner struct {
	crypto.Signer
	fail atomic.Int32
}

func (s *flakySigner) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if s.fail.Add(-1) >= 0 {
		return nil, errors.New("kms: signing service unavailable (503)")
	}
	return s.Signer.Sign(r, digest, opts)
}

func blipFlakyKeyServer(t *testing.T, maxVersion uint16, failures int32) *httptest.Server {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	signer := &flakySigner{Signer: key}
	signer.fail.Store(failures)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.TLS = &tls.Config{
		MaxVersion:   maxVersion,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: signer}},
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// Regression (found in review, twenty-first session): a TLS 1.2
// handshake_failure from a server's failed signature is retried.
// A Go TLS 1.2 server whose private-key signer fails (an HSM or KMS that is
// overloaded mid-handshake) answers with a fatal handshake_failure (40):
// crypto/tls's generateServerKeyExchange error path sends
// alertHandshakeFailure. The fault is the server's and transient — the very
// next request succeeds — yet classifyTLSAlertCode files every
// handshake_failure UNKNOWN: never retried by the decorator, dead-lettered
// for review, never auto-replayed. The same fault under TLS 1.3 is
// internal_error (80), which stays TRANSPORT (second subtest, passes), so
// one server-side blip is classified by the negotiated TLS version.
func TestTransientServerSigningFailureIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  uint16
	}{
		{"TLS 1.2 (handshake_failure)", tls.VersionTLS12},
		{"TLS 1.3 (internal_error)", tls.VersionTLS13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := blipFlakyKeyServer(t, tc.max, 1)
			client := srv.Client()
			client.Transport.(*http.Transport).ForceAttemptHTTP2 = false

			_, err := client.Get(srv.URL)
			if err == nil {
				t.Fatal("the first handshake succeeded; the case does not reproduce")
			}
			// The very same request now succeeds: the failure was transient.
			resp, err2 := client.Get(srv.URL)
			if err2 != nil {
				t.Fatalf("the second request failed too (%v): the case does not show a transient fault", err2)
			}
			resp.Body.Close()

			got := taxonomy.ClassifyError(err)
			if p := taxonomy.PolicyFor(got); !p.Retryable {
				t.Errorf("ClassifyError(%q) = %s (retryable %v, auto-replay %v): a server-side signing blip that the next attempt survives must be retried, not kept for review",
					err, got, p.Retryable, p.AutoReplay)
			}
		})
	}
}
