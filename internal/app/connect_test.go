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
	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/internal/support"
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

// A refund whose reply is lost (the connection resets after Redis booked
// it) is booked once: the client ConnectRedis returns does not send the
// script again (go-redis's default would retry after the EOF).
func TestConnectRedisDoesNotRepeatAWriteWhoseReplyWasLost(t *testing.T) {
	direct, prefix := redistest.Client(t)
	p := redistest.NewReplyDropper(t, direct.Options().Addr, "lost-reply-order")
	rdb, err := app.ConnectRedis(context.Background(), config.Redis{URL: "redis://" + p.Addr() + "/" + strconv.Itoa(direct.Options().DB)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	// Load the script first (through the direct client): the dropped request
	// must be the one that books, not a NOSCRIPT attempt.
	if err := support.NewRedisOrders(direct, prefix).Refund(context.Background(), support.Refund{InvocationID: "warm-up", OrderID: support.DemoOrders()[1].ID, AmountCents: 100}); err != nil {
		t.Fatal(err)
	}
	orders := support.NewRedisOrders(rdb, prefix)
	order := support.DemoOrders()[0]
	err = orders.Refund(context.Background(), support.Refund{InvocationID: "lost-reply-order", OrderID: order.ID, AmountCents: 100})
	if err == nil || !p.Dropped() {
		t.Fatalf("Refund = %v, dropped %v; want the lost reply's error", err, p.Dropped())
	}
	recs, err := support.NewRedisOrders(direct, prefix).Refunds(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.InvocationID == "lost-reply-order" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d refunds booked after one call whose reply was lost, want 1", n)
	}
}
