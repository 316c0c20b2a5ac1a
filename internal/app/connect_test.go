package app_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
)

// A worker started while NATS is down waits for it.
func TestConnectNATSWithRetryWaitsForTheServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := app.ConnectNATSWithRetry(ctx, config.NATS{URL: "nats://127.0.0.1:" + strconv.Itoa(port)}, "t", zerolog.Nop())
		if err == nil {
			nc.Close()
		}
		done <- result{err}
	}()
	time.Sleep(700 * time.Millisecond) // let the first attempts fail
	select {
	case r := <-done:
		t.Fatalf("returned before the server existed: %v", r.err)
	default:
	}
	natstest.RunServerAt(t, t.TempDir(), port)
	if r := <-done; r.err != nil {
		t.Fatal(r.err)
	}
}

func TestConnectNATSWithRetryGivesUpWithContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := app.ConnectNATSWithRetry(ctx, config.NATS{URL: "nats://127.0.0.1:1"}, "t", zerolog.Nop()); err == nil {
		t.Fatal("connected to a closed port")
	}
}
