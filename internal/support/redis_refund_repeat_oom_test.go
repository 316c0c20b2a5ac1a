package support_test

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/support"
)

// Regression (found in review, twentieth session): the booking script's
// repeat path wrote first (INCR of the repeats counter) before answering
// "booked before". Under maxmemory with noeviction Redis refuses a script's
// first write with -OOM, so a refund asked again under a key that WAS
// booked (the reply of the first call lost, or a resumed invocation) got
// an error reply, which redisNotApplied reads as "known not applied":
// refund_order answered a plain retryable outage with no may_have_acted for
// a refund that happened. The counter's INCR is now a redis.pcall whose
// refusal is ignored. A new booking under OOM is still refused whole
// (HINCRBY is its first write) and rightly answered as not applied.
func TestRedisRepeatOfBookedKeyUnderOOMAnswersBooked(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not on PATH")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--maxmemory-policy", "noeviction", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for rdb.Ping(ctx).Err() != nil {
		if ctx.Err() != nil {
			t.Fatal("redis-server did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	orders := support.NewRedisOrders(rdb, "")
	r := support.Refund{InvocationID: "inv-1", OrderID: "A-1042", AmountCents: 500, IdempotencyKey: "k-1"}
	if err := orders.Refund(ctx, r); err != nil {
		t.Fatal(err)
	}
	// Memory is full (maxmemory below what is used).
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	err = orders.Refund(ctx, r)
	if err != nil {
		t.Errorf("refund under key k-1, booked before, asked again while Redis is out of memory: %v "+
			"(want nil, the first booking: the repeat path's INCR fails first, and the error reads as not applied)", err)
	}
	// A new booking is refused before its first write: nothing applied.
	err = orders.Refund(ctx, support.Refund{InvocationID: "inv-2", OrderID: "A-1042", AmountCents: 100, IdempotencyKey: "k-2"})
	if !errors.Is(err, support.ErrUnavailable) || errors.Is(err, support.ErrMayHaveApplied) {
		t.Errorf("new refund while Redis is out of memory: %v, want ErrUnavailable (refused before its first write)", err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	rs, err := orders.Refunds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].InvocationID != "inv-1" {
		t.Errorf("refunds after the OOM calls = %+v, want only inv-1's", rs)
	}
}
