package dlq_test

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// delayProxy forwards TCP to target and, once delay is set, holds every
// chunk the server sends for that long (order kept): a slow link or a
// loaded server, where a healthy direct get simply takes a while.
type delayProxy struct {
	ln    net.Listener
	delay atomic.Int64
}

func startDelayProxy(t *testing.T, target string) *delayProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &delayProxy{ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			t.Cleanup(func() { _ = c.Close(); _ = s.Close() })
			go func() { _, _ = io.Copy(s, c) }()
			type chunk struct {
				at time.Time
				b  []byte
			}
			q := make(chan chunk, 1<<16)
			go func() {
				for ch := range q {
					time.Sleep(time.Until(ch.at))
					if _, err := c.Write(ch.b); err != nil {
						return
					}
				}
			}()
			go func() {
				defer close(q)
				buf := make([]byte, 64<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 {
						q <- chunk{time.Now().Add(time.Duration(p.delay.Load())), append([]byte(nil), buf[:n]...)}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return p
}

// Regression (found in review, twenty-first session): a slow but healthy
// direct get keeps the caller's whole deadline.
// Review (8ca8151): directTry gives a direct get at most half of what is
// left of ctx. A healthy direct get that takes more than half the caller's
// deadline (here: a 300 ms answer, a 500 ms deadline) times out, the info
// refresh that follows (another 300 ms) cannot finish either, and Get
// fails, where the direct get with the caller's whole deadline (the code
// before the change) answers in time. The fallback is for a stream whose
// direct gets were turned off; on a stream that allows them the split only
// costs half the caller's time.
func TestGetWithDeadlineTwiceTheRoundTripSucceeds(t *testing.T) {
	srv := natstest.RunServer(t)
	p := startDelayProxy(t, srv.Addr().String())
	nc, err := nats.Connect("nats://" + p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := streams.Config{}.WithDefaults()
	if _, err := streams.Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	dcfg := dlq.Config{Stream: cfg.DLQStream, Prefix: cfg.DLQPrefix, Consumer: cfg.ReplayerConsumer}
	ack, err := dlq.NewPublisher(js, dcfg).Publish(ctx, sampleEntry())
	if err != nil {
		t.Fatal(err)
	}
	r := dlq.NewReader(js, dcfg)
	if _, err := r.Get(ctx, ack.Sequence); err != nil { // looks the stream up (direct gets allowed)
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, cfg.DLQStream)
	if err != nil {
		t.Fatal(err)
	}

	const rtt, deadline = 300 * time.Millisecond, 500 * time.Millisecond
	p.delay.Store(int64(rtt))

	// Control: the direct get alone, with the caller's whole deadline (what
	// getMsg did before the change), answers in time.
	cctx, ccancel := context.WithTimeout(context.Background(), deadline)
	start := time.Now()
	_, cerr := s.GetMsg(cctx, ack.Sequence)
	ccancel()
	if cerr != nil {
		t.Skipf("control direct get with a %v deadline failed (%v after %v): the proxy is slower than meant", deadline, cerr, time.Since(start))
	}
	took := time.Since(start)

	gctx, gcancel := context.WithTimeout(context.Background(), deadline)
	defer gcancel()
	start = time.Now()
	if _, err := r.Get(gctx, ack.Sequence); err != nil {
		t.Fatalf("Get with a %v deadline failed after %v: %v; the direct get alone with the same deadline answered in %v",
			deadline, time.Since(start).Round(time.Millisecond), err, took.Round(time.Millisecond))
	}
}
