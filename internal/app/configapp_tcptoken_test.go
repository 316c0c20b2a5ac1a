package app_test

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
)

// Regression (found in review, twenty-second session): a password-less user
// (a NATS token) in a tcp:// nats.url is redacted by RedactURL and in
// Connect's log line and error (RedactNATSURL).
//
// nats.go reads the scheme of a server URL only to choose TLS or websocket:
// "tcp://host:4222" (docker-style configurations; config.CheckNATSURL
// accepts it on purpose) is a NATS URL, and its user part without a
// password is sent as the CONNECT auth token, whatever the scheme.
// config.RedactURL hides a password-less user only for the schemes nats,
// tls, ws and wss, so a token in a tcp:// nats.url is printed in the
// worker's "connecting to NATS" log line and in every connect error.
func TestNATSTokenInTCPSchemeURLIsNotLogged(t *testing.T) {
	const token = "s3cr3t-nats-token"
	s := tokenServer(t, token)
	// Premise: the user part of a tcp:// URL really is the credential.
	if nc, err := nats.Connect("tcp://" + token + "@" + s.Addr().String()); err != nil {
		t.Fatalf("token in a tcp:// URL should authenticate: %v", err)
	} else {
		nc.Close()
	}
	if err := config.CheckNATSURL("tcp://" + token + "@" + s.Addr().String()); err != nil {
		t.Fatalf("CheckNATSURL refuses it: %v", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	url := "tcp://" + token + "@" + closed

	if red := config.RedactURL(url); strings.Contains(red, token) {
		t.Errorf("RedactURL(%q) = %q: the token is kept", url, red)
	}
	var logs bytes.Buffer
	cfg := config.DefaultWorker()
	cfg.NATS.URL = url
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Connect logs, tries once, and gives up
	_, err = app.Connect(ctx, cfg, zerolog.New(&logs))
	if err == nil {
		t.Fatal("Connect succeeded")
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("Connect's error shows the token: %v", err)
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("worker log shows the token:\n%s", logs.String())
	}
}
