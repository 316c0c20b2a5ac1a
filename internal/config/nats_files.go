package config

import (
	"fmt"
	"os"
)

// checkFiles reports the credential and certificate files n names that
// cannot be read (a typo in a secret's mount path), and a certificate
// without its key or a key without its certificate. Connecting would fail
// on each of them for ever: a worker that retried would never be ready and
// never say why, so they are configuration errors (exit 2).
func (n NATS) checkFiles() []error {
	var errs []error
	for _, f := range []struct{ key, path string }{
		{"nats.creds_file", n.CredsFile},
		{"nats.nkey_file", n.NKeyFile},
		{"nats.tls.ca_file", n.TLS.CAFile},
		{"nats.tls.cert_file", n.TLS.CertFile},
		{"nats.tls.key_file", n.TLS.KeyFile},
	} {
		if f.path == "" {
			continue
		}
		fh, err := os.Open(f.path)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.key, err))
			continue
		}
		_ = fh.Close()
	}
	if (n.TLS.CertFile == "") != (n.TLS.KeyFile == "") {
		errs = append(errs, fmt.Errorf("nats.tls.cert_file and nats.tls.key_file go together: set both or neither"))
	}
	return errs
}
