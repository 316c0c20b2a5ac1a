package config_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/config"
)

// testUserSeed and testCreds are a throwaway NATS user seed and user
// credentials file (made with nkeys and jwt/v2 for this test; they sign in
// to no server).
const (
	testUserSeed = "SUAL4WHSFT4TA3QVT6WF6IMGKYDKP4E6IN4ZMK465BATHFGODGSHL2E7SY"
	testCreds    = `-----BEGIN NATS USER JWT-----
eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJqdGkiOiJUT0ZLNVhJVlVTU1RVSVI0SkRaV1NCT0lNWktOT1I0WlhDWkZKUEFUUlRJR0M3UjM3SUZRIiwiaWF0IjoxNzk2MjM1ODk3LCJpc3MiOiJBQk1GTTVCS1haN0lIWUhSNjZHNUdHVlVUTERDU1ZGWEdOTFk2WlZNS0FGRE1IVDVWVlA2WkVEUyIsIm5hbWUiOiJhZ2VudGZsZWV0LXRlc3QiLCJzdWIiOiJVQVFTM1lSSkVGVTdSTVdNVkIyRlNYTTJQNzROSDNFQkdCRTNKS1VKRlROWkJKTDRHR0VLNTVJWSIsIm5hdHMiOnsicHViIjp7fSwic3ViIjp7fSwic3VicyI6LTEsImRhdGEiOi0xLCJwYXlsb2FkIjotMSwidHlwZSI6InVzZXIiLCJ2ZXJzaW9uIjoyfX0.HsWznWSTm4nOPdR1S596B9zkIcz0pThQYaYHqUec9Gi-XFSCX0bW19zbMIWY8z6C8WboqOIHxCM43bR5D7QJDg
------END NATS USER JWT------

************************* IMPORTANT *************************
NKEY Seed printed below can be used to sign and prove identity.
NKEYs are sensitive and should be treated as secrets.

-----BEGIN USER NKEY SEED-----
SUALPK3S25TSWA27UHLMTXBOWLESUMZRMKPCWMUSW4DEWGSY4U6X2HDZA4
------END USER NKEY SEED------

*************************************************************
`
)

// credFiles writes a usable CA, client certificate and key, nkey seed
// and creds file, and a garbage file, into a temporary directory.
type credFiles struct{ ca, cert, key, seed, creds, garbage, dir string }

func writeCredFiles(t *testing.T) credFiles {
	t.Helper()
	dir := t.TempDir()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agentfleet-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	f := credFiles{dir: dir,
		ca: filepath.Join(dir, "ca.pem"), cert: filepath.Join(dir, "cert.pem"), key: filepath.Join(dir, "key.pem"),
		seed: filepath.Join(dir, "user.nk"), creds: filepath.Join(dir, "user.creds"), garbage: filepath.Join(dir, "garbage"),
	}
	certPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	writeFile(t, f.ca, certPEM)
	writeFile(t, f.cert, certPEM)
	writeFile(t, f.key, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})))
	writeFile(t, f.seed, testUserSeed+"\n")
	writeFile(t, f.creds, testCreds)
	writeFile(t, f.garbage, "this is not a certificate nor a seed\n")
	return f
}

// Usable files pass, in nats.* and in redis.tls.* alike.
func TestValidateAcceptsUsableCredentialFiles(t *testing.T) {
	f := writeCredFiles(t)
	w := config.DefaultWorker()
	w.NATS = config.NATS{URL: "nats://127.0.0.1:4222", CredsFile: f.creds, NKeyFile: f.seed,
		TLS: config.TLS{CAFile: f.ca, CertFile: f.cert, KeyFile: f.key}}
	w.Redis.URL = "rediss://127.0.0.1:6380"
	w.Redis.TLS = config.TLS{CAFile: f.ca, CertFile: f.cert, KeyFile: f.key}
	if err := w.Validate(); err != nil {
		t.Errorf("worker: %v", err)
	}
	r := config.DefaultReplayer()
	r.NATS, r.Redis = w.NATS, w.Redis
	if err := r.Validate(); err != nil {
		t.Errorf("replayer: %v", err)
	}
}

// Regression (found in review, twentieth session): a credential or
// certificate file that opened but held garbage (a CA bundle that is not
// PEM, an nkey file without a seed: a secret mounted from the wrong key)
// passed Validate, which only opened the files, and failed every connect
// the same way: the worker retried for ever instead of exiting 2. And
// redis.tls.* was not checked at all. Each is now refused, naming the key,
// and the file's content never reaches the error.
func TestValidateRefusesUnusableCredentialFiles(t *testing.T) {
	f := writeCredFiles(t)
	seedOnly := filepath.Join(f.dir, "seed-as-creds")
	writeFile(t, seedOnly, testUserSeed+"\n")
	jwtOnly := filepath.Join(f.dir, "jwt-only.creds")
	writeFile(t, jwtOnly, testCreds[:strings.Index(testCreds, "****")])
	missing := filepath.Join(f.dir, "no-such-file")
	for _, tc := range []struct {
		name, key string
		set       func(*config.NATS, *config.Redis)
	}{
		{"nkey garbage", "nats.nkey_file", func(n *config.NATS, _ *config.Redis) { n.NKeyFile = f.garbage }},
		{"nkey is a certificate", "nats.nkey_file", func(n *config.NATS, _ *config.Redis) { n.NKeyFile = f.ca }},
		{"nkey missing", "nats.nkey_file", func(n *config.NATS, _ *config.Redis) { n.NKeyFile = missing }},
		{"creds garbage", "nats.creds_file", func(n *config.NATS, _ *config.Redis) { n.CredsFile = f.garbage }},
		{"creds is a bare seed", "nats.creds_file", func(n *config.NATS, _ *config.Redis) { n.CredsFile = seedOnly }},
		{"creds without seed", "nats.creds_file", func(n *config.NATS, _ *config.Redis) { n.CredsFile = jwtOnly }},
		{"creds missing", "nats.creds_file", func(n *config.NATS, _ *config.Redis) { n.CredsFile = missing }},
		{"nats ca garbage", "nats.tls.ca_file", func(n *config.NATS, _ *config.Redis) { n.TLS.CAFile = f.garbage }},
		{"nats ca is a key", "nats.tls.ca_file", func(n *config.NATS, _ *config.Redis) { n.TLS.CAFile = f.key }},
		{"nats key garbage", "nats.tls.key_file", func(n *config.NATS, _ *config.Redis) { n.TLS.CertFile, n.TLS.KeyFile = f.cert, f.garbage }},
		{"nats cert is the key", "nats.tls.cert_file", func(n *config.NATS, _ *config.Redis) { n.TLS.CertFile, n.TLS.KeyFile = f.key, f.key }},
		{"nats cert without key", "nats.tls.key_file go together", func(n *config.NATS, _ *config.Redis) { n.TLS.CertFile = f.cert }},
		{"redis ca missing", "redis.tls.ca_file", func(_ *config.NATS, r *config.Redis) { r.TLS.CAFile = missing }},
		{"redis ca garbage", "redis.tls.ca_file", func(_ *config.NATS, r *config.Redis) { r.TLS.CAFile = f.garbage }},
		{"redis key garbage", "redis.tls.key_file", func(_ *config.NATS, r *config.Redis) { r.TLS.CertFile, r.TLS.KeyFile = f.cert, f.garbage }},
		{"redis key without cert", "redis.tls.key_file go together", func(_ *config.NATS, r *config.Redis) { r.TLS.KeyFile = f.key }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := config.DefaultWorker()
			w.NATS.URL, w.Redis.URL = "nats://127.0.0.1:4222", "redis://127.0.0.1:6379"
			tc.set(&w.NATS, &w.Redis)
			r := config.DefaultReplayer()
			r.NATS, r.Redis = w.NATS, w.Redis
			for who, err := range map[string]error{"worker": w.Validate(), "replayer": r.Validate()} {
				if err == nil || !strings.Contains(err.Error(), tc.key) {
					t.Errorf("%s: Validate returned %v, want an error naming %s", who, err, tc.key)
					continue
				}
				for _, secret := range []string{testUserSeed, "SUALPK3S25TSWA27", "this is not a certificate", "PRIVATE KEY-----\n"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("%s: the error quotes a file's content (%q): %v", who, secret, err)
					}
				}
			}
		})
	}
}

// redis.tls.* is not checked when Redis is not used (redis.url empty: the
// NATS KV stores), as nats.* is not in embedded mode.
func TestRedisTLSFilesUncheckedWithoutRedis(t *testing.T) {
	w := config.DefaultWorker()
	w.Embedded.Enabled = true
	w.Redis.TLS.CAFile = filepath.Join(t.TempDir(), "no-such-file")
	if err := w.Validate(); err != nil {
		t.Errorf("redis.url empty: %v", err)
	}
}

// CheckFiles (the connect helpers' guard) reports what Validate reports.
func TestCheckFilesMatchesValidate(t *testing.T) {
	f := writeCredFiles(t)
	n := config.NATS{URL: "nats://127.0.0.1:4222", NKeyFile: f.garbage}
	if err := n.CheckFiles(); err == nil || !strings.Contains(err.Error(), "nats.nkey_file") {
		t.Errorf("NATS.CheckFiles: %v, want an error naming nats.nkey_file", err)
	}
	if err := (config.TLS{CAFile: f.garbage}).CheckFiles("redis.tls"); err == nil || !strings.Contains(err.Error(), "redis.tls.ca_file") {
		t.Errorf("TLS.CheckFiles: %v, want an error naming redis.tls.ca_file", err)
	}
	if err := (config.NATS{CredsFile: f.creds, NKeyFile: f.seed, TLS: config.TLS{CAFile: f.ca}}).CheckFiles(); err != nil {
		t.Errorf("usable files: %v", err)
	}
}
