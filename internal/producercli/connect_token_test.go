package producercli_test

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/producercli"
)

// A token holding '/' (or '#', '?') ends url.Parse's authority early, so
// nats.go dials the token's first part as the host: RedactURL hides the
// printed URL, but nats.go's dial error ("lookup s3cr3t ...: no such
// host") is printed as it is, and it is not a *url.Error, so
// RedactURLError leaves it. A mixed server list (the second server
// without a scheme, as nats.go allows) prints the first token.
func TestConnectErrorHidesTheTokenEverywhere(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, url := range []string{
		"nats://s3cr3t/tok@" + closed,
		"nats://s3cr3t@" + closed + ",tok2@" + closed,
	} {
		var out, errb bytes.Buffer
		env := producercli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		code := producercli.Run(context.Background(), []string{"--nats-url", url, "--timeout", "2s",
			"send", "--agent", "support", "--user", "u", "--session", "s", "hello"}, env)
		if code == producercli.ExitOK {
			t.Fatalf("%s: exit %d, want a connect failure", url, code)
		}
		if strings.Contains(errb.String()+out.String(), "s3cr3t") {
			t.Errorf("%s: the secret is printed:\n%s%s", url, out.String(), errb.String())
		}
	}
}
