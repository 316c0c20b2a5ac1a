// Regression (found in review, twenty-fourth session): the comma-cut redaction
// of cf1443c leaked or hid too much.
package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/internal/config"
)

// TestRedactURLSchemelessFirstServerList: RedactURL's doc says a
// NATS URL without a scheme and with a comma is a list. cf1443c dropped
// the "more than one ://" test, and strings.Cut(s, "://") finds the second
// server's scheme, so "h1:4222,nats..." reads as the scheme
// "h1:4222,nats": not a list, url.Parse reads an opaque URL, the password
// is printed. Before cf1443c it was redacted (two "://": a list).
func TestRedactURLSchemelessFirstServerList(t *testing.T) {
	in := "h1:4222,nats://u:s3cr3t@h2:4222,nats://h3:4222"
	if got := config.RedactURL(in); strings.Contains(got, "s3cr3t") {
		t.Fatalf("RedactURL(%q) = %q: the password is printed", in, got)
	}
}

// TestConnectErrorHidesPercentEncodedCommaCutPiece: nats.go dials
// the first half of a comma-cut token as a host, and url.Parse decodes a
// host's %-escapes of non-ASCII bytes: the error names "été" while
// userInfoPieces holds only "%C3%A9t%C3%A9".
func TestConnectErrorHidesPercentEncodedCommaCutPiece(t *testing.T) {
	raw := "nats://%C3%A9t%C3%A9,Winter@127.0.0.1:1"
	seen := false
	for i := 0; i < 64 && !seen; i++ { // nats.go shuffles the two servers; the error is the last one's
		_, err := nats.Connect(raw, nats.Timeout(2*time.Second))
		if err == nil {
			t.Fatal("connected")
		}
		if !strings.Contains(err.Error(), "lookup") {
			continue
		}
		seen = true
		if got := config.RedactConnectError(err, raw).Error(); strings.Contains(got, "été") {
			t.Fatalf("RedactConnectError(%q, %q) = %q: the first half of the token (été) is printed", err, raw, got)
		}
	}
	if !seen {
		t.Fatal("nats.go never dialled the token's first half")
	}
}

// TestRedactNATSURLKeepsHostsOfACredentialedList: a list whose
// later servers carry user info without a scheme (nats.go accepts it) lost
// every host but the last with cf1443c, in the redacted URL and in the
// connect error; before, each kept its host.
func TestRedactNATSURLKeepsHostsOfACredentialedList(t *testing.T) {
	in := "nats://app:pw@n1.internal:4222,app:pw@n2.internal:4222"
	if got := config.RedactNATSURL(in); !strings.Contains(got, "n1.internal") {
		t.Errorf("RedactNATSURL(%q) = %q: which servers the worker uses is hidden", in, got)
	}
	raw := "nats://n1.internal:4222,tok@10.0.0.5:4222"
	msg := "dial tcp: lookup n1.internal on 10.255.255.53:53: no such host; dial tcp 10.0.0.5:4222: i/o timeout"
	if got := config.RedactConnectError(errors.New(msg), raw).Error(); got != msg {
		t.Errorf("RedactConnectError(%q, %q) = %q: a server's name and the port 4222 are scrubbed from the error", msg, raw, got)
	}
}
