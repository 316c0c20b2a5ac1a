package producercli_test

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/producercli"
)

// A NATS URL's token or password never reaches the producer's error
// output, neither in the URL it prints nor in the client's own error text:
// the connect error printed the URL as given (found by a newcomer run:
// "connect to nats://s3cr3t@...").
func TestConnectErrorHidesTheURLsSecrets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, url := range []string{
		"nats://s3cr3t-token@" + closed,
		"nats://user:s3cr3t-pass@" + closed,
		"nats://s3cr3t-token@127.0.0.1:42x", // a typo in the port: url.Parse quotes the URL
		// A token holding '/' ends url.Parse's authority early, so nats.go
		// dials the token's start as a host and names it in its dial error
		// ("lookup s3cr3t ...: no such host"), which is no *url.Error.
		"nats://s3cr3t/tok@" + closed,
		// A server list whose second server has no scheme, as nats.go allows.
		"nats://s3cr3t@" + closed + ",tok2@" + closed,
	} {
		var out, errb bytes.Buffer
		env := producercli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		code := producercli.Run(context.Background(), []string{"--nats-url", url, "--timeout", "2s",
			"send", "--agent", "support", "--user", "u", "--session", "s", "hello"}, env)
		if code == producercli.ExitOK {
			t.Fatalf("%s: exit %d, want a connect failure", url, code)
		}
		if strings.Contains(errb.String(), "s3cr3t") || strings.Contains(out.String(), "s3cr3t") {
			t.Errorf("%s: the secret is printed:\n%s%s", url, out.String(), errb.String())
		}
		if !strings.Contains(errb.String(), "REDACTED") {
			t.Errorf("%s: want the redacted URL in the error, got:\n%s", url, errb.String())
		}
	}
}
