package support_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/internal/support"
)

// readRESPCommand reads one RESP array of bulk strings and returns its
// words.
func readRESPCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return nil, err
	}
	words := make([]string, 0, n)
	for i := 0; i < n; i++ {
		if _, err := r.ReadString('\n'); err != nil { // $len
			return nil, err
		}
		w, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		words = append(words, strings.TrimRight(w, "\r\n"))
	}
	return words, nil
}

// Regression (found in review, twentieth session): redisNotApplied trusts
// a dial error as "the script never ran", which holds only while go-redis
// does not send the booking again. With retries on (ConnectRedis honours an
// explicit positive max_retries in redis.url) go-redis sent EVALSHA, lost
// the reply (Redis had applied the booking), sent it again, and that
// resend's dial failed because the server was now down: the caller got the
// resend's dial error, and a refund that was applied was answered as a
// plain retryable outage known to have done nothing (ErrUnavailable, no
// may_have_acted). RedisOrders now sends the booking at most once
// (runScriptOnce), whatever the client's retry options.
func TestRedisRefundLostReplyWithClientRetriesMayHaveApplied(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sawScript := make(chan struct{})
	go func() {
		defer ln.Close()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r := bufio.NewReader(c)
			for {
				words, err := readRESPCommand(r)
				if err != nil {
					c.Close()
					break
				}
				cmd := strings.ToUpper(words[0])
				if cmd == "EVALSHA" || cmd == "EVAL" {
					// The request reached the server (a real Redis
					// would have booked it); the reply is lost and the
					// server goes away: later dials are refused.
					close(sawScript)
					ln.Close()
					c.Close()
					return
				}
				if cmd == "HELLO" {
					c.Write([]byte("-ERR unknown command 'HELLO'\r\n"))
					continue
				}
				c.Write([]byte("+OK\r\n"))
			}
		}
	}()
	rdb := redis.NewClient(&redis.Options{
		Addr: ln.Addr().String(), Protocol: 2, DisableIdentity: true,
		MaxRetries: 1, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second,
	})
	t.Cleanup(func() { rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = support.NewRedisOrders(rdb, "").Refund(ctx, support.Refund{InvocationID: "inv", OrderID: "A-1042", AmountCents: 100})
	select {
	case <-sawScript:
	default:
		t.Fatalf("precondition: the booking script never reached the server (err %v)", err)
	}
	if err == nil {
		t.Fatal("precondition: refund succeeded")
	}
	if !errors.Is(err, support.ErrMayHaveApplied) {
		t.Errorf("refund whose EVALSHA reached Redis and whose reply was lost returned %v: "+
			"not ErrMayHaveApplied (ErrUnavailable=%v): go-redis's resend replaced the lost reply with its dial error",
			err, errors.Is(err, support.ErrUnavailable))
	}
}

// Regression (found in review, twentieth session): a client with retries
// on (max_retries=3 in redis.url) sent an unkeyed booking again after its
// reply was lost, and Redis applied it twice: two refunds, and the caller
// told it succeeded once. The booking is now sent once, and its lost reply
// answered ErrMayHaveApplied.
func TestRedisRefundIsNotResentByClientRetries(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	p := redistest.NewReplyDropper(t, rdb.Options().Addr, "resent-booking-marker")
	opts := *rdb.Options()
	opts.Addr = p.Addr()
	opts.MaxRetries = 3
	opts.MinRetryBackoff, opts.MaxRetryBackoff = time.Millisecond, 2*time.Millisecond
	retrying := redis.NewClient(&opts)
	t.Cleanup(func() { retrying.Close() })
	ctx := context.Background()
	direct := support.NewRedisOrders(rdb, prefix)
	if err := direct.Refund(ctx, support.Refund{InvocationID: "warm", OrderID: "A-1001", AmountCents: 1}); err != nil {
		t.Fatal(err) // loads the script: the dropped request is an EVALSHA that runs
	}
	err := support.NewRedisOrders(retrying, prefix).Refund(ctx,
		support.Refund{InvocationID: "resent-booking-marker", OrderID: "A-1042", AmountCents: 100})
	if !p.Dropped() {
		t.Fatalf("precondition: no reply was dropped (err %v)", err)
	}
	rs, rerr := direct.Refunds(ctx)
	if rerr != nil {
		t.Fatal(rerr)
	}
	booked := 0
	for _, rf := range rs {
		if rf.InvocationID == "resent-booking-marker" {
			booked++
		}
	}
	if booked != 1 {
		t.Errorf("an unkeyed refund whose reply was lost was booked %d times, want 1 (err %v)", booked, err)
	}
	if !errors.Is(err, support.ErrMayHaveApplied) {
		t.Errorf("refund whose reply was lost returned %v, want ErrMayHaveApplied", err)
	}
}
