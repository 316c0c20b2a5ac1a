package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
)

// checkFiles reports the credential and certificate files n names that
// cannot be used: one that cannot be read (a typo in a secret's mount
// path), one that holds no usable credential or certificate (a secret
// mounted from the wrong key: a CA bundle that is not PEM, an nkey file
// without a user seed), and a certificate without its key or a key without
// its certificate. Connecting would fail on each of them for ever: a
// worker that retried would never be ready and never say why, so they are
// configuration errors (exit 2). The files are read as nats.go reads them
// when it connects; the errors name the key and the path, never a file's
// content.
func (n NATS) checkFiles() []error {
	var errs []error
	if n.CredsFile != "" {
		if err := checkCredsFile(n.CredsFile); err != nil {
			errs = append(errs, fmt.Errorf("nats.creds_file: %w", err))
		}
	}
	if n.NKeyFile != "" {
		// nats.go's own reading of the file (ConnectNATS uses it): a user
		// seed, decorated or not.
		var pe *fs.PathError
		if _, err := nats.NkeyOptionFromSeed(n.NKeyFile); errors.As(err, &pe) {
			errs = append(errs, fmt.Errorf("nats.nkey_file: %w", err)) // names the path
		} else if err != nil {
			errs = append(errs, fmt.Errorf("nats.nkey_file %s: %w", n.NKeyFile, err))
		}
	}
	return append(errs, n.TLS.checkFiles("nats.tls")...)
}

// CheckFiles returns the problems Validate finds in the credential and
// certificate files n names (nats.creds_file, nats.nkey_file, nats.tls.*),
// joined, or nil. Connecting with any of them fails on every try, so the
// connect helpers call it too, for callers that did not validate.
func (n NATS) CheckFiles() error { return errors.Join(n.checkFiles()...) }

// CheckFiles returns the problems in the certificate files t names,
// joined, or nil; section is the key of t ("redis.tls") that the errors
// name.
func (t TLS) CheckFiles(section string) error { return errors.Join(t.checkFiles(section)...) }

// checkFiles reports a CA file that cannot be read or holds no PEM
// certificate, a client certificate and key that do not load as a pair
// (tls.LoadX509KeyPair), and one of the two named without the other. The
// errors name section's keys (e.g. nats.tls.ca_file).
func (t TLS) checkFiles(section string) []error {
	var errs []error
	if t.CAFile != "" {
		if pem, err := os.ReadFile(t.CAFile); err != nil {
			errs = append(errs, fmt.Errorf("%s.ca_file: %w", section, err))
		} else if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			errs = append(errs, fmt.Errorf("%s.ca_file %s: holds no PEM certificate", section, t.CAFile))
		}
	}
	switch {
	case t.CertFile != "" && t.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err == nil {
			_, err = x509.ParseCertificate(cert.Certificate[0])
		}
		if err != nil {
			// crypto/tls names PEM block types and what failed, never the
			// key's bytes.
			errs = append(errs, fmt.Errorf("%s.cert_file %s and %s.key_file %s: %w", section, t.CertFile, section, t.KeyFile, err))
		}
	case t.CertFile != "" || t.KeyFile != "":
		for _, f := range []struct{ key, path string }{{"cert_file", t.CertFile}, {"key_file", t.KeyFile}} {
			if f.path == "" {
				continue
			}
			if fh, err := os.Open(f.path); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: %w", section, f.key, err))
			} else {
				_ = fh.Close()
			}
		}
		errs = append(errs, fmt.Errorf("%s.cert_file and %s.key_file go together: set both or neither", section, section))
	}
	return errs
}

// checkCredsFile reads a NATS user credentials file as nats.go does when
// it connects (nats.UserCredentials: the user JWT, then the seed that
// signs the server's nonce) and reports a file that cannot be read, holds
// no decorated user JWT, or holds no seed.
func checkCredsFile(path string) error {
	var o nats.Options
	if err := nats.UserCredentials(path)(&o); err != nil {
		return err
	}
	jwt, err := o.UserJWT()
	if err != nil {
		return err
	}
	// nats.go sends the whole file as the JWT when it finds no
	// "-----BEGIN NATS USER JWT-----" block: the server would refuse it
	// on every try. A JWT is three base64url parts joined by dots.
	if strings.Count(jwt, ".") != 2 || strings.ContainsAny(jwt, " \t\r\n") {
		return fmt.Errorf("%s: holds no user JWT (a -----BEGIN NATS USER JWT----- block)", path)
	}
	if _, err := o.SignatureCB([]byte("agentfleet-config-check")); err != nil {
		return err // "unable to extract key pair from file <path>: ..."
	}
	return nil
}
