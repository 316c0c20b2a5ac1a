package app

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/config"
)

// Regression (found in review, twentieth session): config.Worker.Validate
// skips nats.creds_file, nats.nkey_file and nats.tls.* in embedded mode
// ("The embedded server is connected to without them"), but Connect passed
// cfg.NATS, files and all, to ConnectNATSWithRetry for the embedded
// server: ConnectNATS checks them (a stale path exited 2 with
// nats.creds_file named, although Validate said embedded mode ignores it)
// and a CA file made the client demand TLS of the embedded server, which
// has none: "NATS not reachable; retrying" for ever. A deployment's
// environment (AGENTFLEET_NATS_TLS_CA_FILE) with AGENTFLEET_NATS_URL= for
// a local embedded run or demo hit it. Connect now connects to the
// embedded server with its URL alone.
func TestEmbeddedModeIgnoresTheExternalServersFiles(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, set := range map[string]func(*config.NATS){
		"tls.ca_file (valid)":   func(n *config.NATS) { n.TLS.CAFile = ca },
		"creds_file (not here)": func(n *config.NATS) { n.CredsFile = filepath.Join(dir, "missing.creds") },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := config.DefaultWorker()
			cfg.Embedded.Enabled, cfg.Embedded.DataDir, cfg.Embedded.Port = true, t.TempDir(), -1
			cfg.NATS.URL = ""
			cfg.MetricsAddr = ""
			cfg.LogLevel = "error"
			set(&cfg.NATS)
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
			defer cancel()
			inf, err := Connect(ctx, cfg, NewLogger(io.Discard, "error"))
			if err != nil {
				t.Fatalf("embedded mode, which Validate says connects without the external server's files: %v", err)
			}
			inf.Close()
		})
	}
}
