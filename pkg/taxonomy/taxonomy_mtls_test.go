package taxonomy_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, twenty-first session): an mTLS endpoint
// refusing this client's certificate (a TLS alert) is filed AUTH, or a class
// never retried nor replayed, and not TRANSPORT.
//
// An endpoint that refuses this client's certificate (mutual TLS through a
// provider gateway or an egress proxy: the certificate is missing, expired
// or signed by a CA the endpoint does not trust) answers with a TLS alert,
// which Go returns as *net.OpError{Op: "remote error", Err: <crypto/tls
// alert>} inside the *url.Error. ClassifyError filed it TRANSPORT through
// the *net.OpError/*url.Error rule: retried in the decorator, degraded,
// dead-lettered and replayed automatically, never paged, although every
// retry and every replay gets the same refusal. ClassifyError's step 5 (and
// the README's "A misconfigured endpoint was retried and replayed forever")
// make the server-certificate side of the same handshake AUTH for exactly
// this reason; the client-certificate side must page too.
func TestClientCertificateRefusedIsNotTransport(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	quiet := log.New(io.Discard, "", 0)

	cases := []struct {
		name   string
		server func(*httptest.Server)
		client func(*httptest.Server, *tls.Config)
	}{
		{
			name: "no client certificate (TLS 1.3: certificate required)",
			server: func(s *httptest.Server) {
				s.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
			},
		},
		// TLS 1.2 refuses a missing client certificate with a bare
		// handshake_failure, which a server's failed signature sends too:
		// TRANSPORT (TestTLSAlertsBesideTheCertificate).
		{
			name: "client certificate from a CA the endpoint does not trust",
			server: func(s *httptest.Server) {
				s.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: x509.NewCertPool()}
			},
			client: func(s *httptest.Server, c *tls.Config) {
				// httptest's own certificate, which the server's empty
				// client CA pool does not trust.
				c.Certificates = []tls.Certificate{s.TLS.Certificates[0]}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(ok)
			srv.Config.ErrorLog = quiet
			tc.server(srv)
			srv.StartTLS()
			defer srv.Close()
			client := srv.Client()
			if tc.client != nil {
				tc.client(srv, client.Transport.(*http.Transport).TLSClientConfig)
			}
			resp, err := client.Get(srv.URL)
			if err == nil {
				resp.Body.Close()
				t.Fatal("the endpoint accepted the client; the case does not reproduce")
			}
			got := taxonomy.ClassifyError(err)
			p := taxonomy.PolicyFor(got)
			if got != taxonomy.Auth {
				t.Errorf("ClassifyError(%q) = %s (retryable %v, auto-replay %v, page %v), want AUTH: a refused client certificate never heals by retrying",
					err, got, p.Retryable, p.AutoReplay, p.Page)
			}
		})
	}
}

// TestTLSAlertsBesideTheCertificate pins the rest of the TLS alert mapping
// against real handshakes: an alert refusing this client's TLS parameters
// is UNKNOWN (never retried, kept for review), and an alert that says
// nothing about the set-up being wrong keeps TRANSPORT.
func TestTLSAlertsBesideTheCertificate(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	quiet := log.New(io.Discard, "", 0)

	cases := []struct {
		name   string
		server *tls.Config
		client func(*tls.Config)
		want   taxonomy.Class
	}{
		{
			// Also what a TLS 1.2 server whose signing key failed once
			// sends: retried (see classifyTLSAlertCode).
			name:   "handshake_failure (TLS 1.2, no client certificate)",
			server: &tls.Config{ClientAuth: tls.RequireAnyClientCert, MaxVersion: tls.VersionTLS12},
			want:   taxonomy.Transport,
		},
		{
			name:   "protocol_version",
			server: &tls.Config{MinVersion: tls.VersionTLS13},
			client: func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 },
			want:   taxonomy.Unknown,
		},
		{
			name:   "no_application_protocol",
			server: &tls.Config{NextProtos: []string{"agentfleet-test"}},
			client: func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} },
			want:   taxonomy.Transport,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(ok)
			srv.Config.ErrorLog = quiet
			srv.TLS = tc.server
			srv.StartTLS()
			defer srv.Close()
			client := srv.Client()
			tr := client.Transport.(*http.Transport)
			tr.ForceAttemptHTTP2 = false
			if tc.client != nil {
				tc.client(tr.TLSClientConfig)
			}
			resp, err := client.Get(srv.URL)
			if err == nil {
				resp.Body.Close()
				t.Fatal("the endpoint accepted the client; the case does not reproduce")
			}
			if got := taxonomy.ClassifyError(err); got != tc.want {
				t.Errorf("ClassifyError(%q) = %s, want %s", err, got, tc.want)
			}
		})
	}
}
