package app

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/shutdown"
)

// Regression (found in review, twentieth session): cmd/worker documents
// "130 a demo interrupted (Ctrl-C)". A demo against an external NATS that
// is not up yet waits in ConnectNATSWithRetry ("NATS not reachable;
// retrying"); Ctrl-C there ended it with "context canceled" and
// demoExitCode 1, the code reserved for "the demo found a lost request or
// a duplicated effect". RunDemo's error matches ErrDemoInterrupted now.
func TestDemoInterruptedWhileConnectingExits130(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close() // nothing listens there: NATS is down
	cfg := config.DefaultWorker()
	cfg.Embedded.Enabled = false
	cfg.NATS.URL = "nats://127.0.0.1:" + strconv.Itoa(port)
	cfg.Redis.URL = ""
	cfg.LogLevel = "error"
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel) // Ctrl-C while it waits for NATS
	var out bytes.Buffer
	_, err = RunDemo(ctx, cfg, 3, os.Getenv, &out, io.Discard)
	if code := demoExitCode(err); code != shutdown.ForcedExitCode {
		t.Fatalf("demo interrupted while connecting: exit %d (err %v), want %d", code, err, shutdown.ForcedExitCode)
	}
}
