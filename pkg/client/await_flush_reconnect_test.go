package client_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, nineteenth session): Await subscribes and
// then flushes the connection (a PING it waits the PONG of) before it looks
// at the stream. When the connection drops while that PING is unanswered
// (a NATS server restart, a dropped link), nats.go closes every pending
// flush channel and FlushWithContext returns
// nats.ErrConnectionClosed, although the connection is only reconnecting and
// comes back at once. Await returns that error as final: `producer send
// --wait` exits 1 ("nats: connection closed") and a batch line is "error"
// (exit 1) for a request that was submitted and completes right after the
// reconnect. The look-ups Await and the batch make were fixed for exactly
// this restart (README, sixteenth and seventeenth sessions); the flush was
// not. Correct: while the connection is reconnecting (not closed for good),
// Await flushes again after the reconnect and goes on waiting, so it returns
// the result published after the reconnect.
func TestAwaitSurvivesAFlushLostInAReconnect(t *testing.T) {
	tg := streamstest.Embedded(t)
	proxy := startPingProxy(t, strings.TrimPrefix(tg.NC.ConnectedUrl(), "nats://"))
	reconnected := make(chan struct{}, 1)
	nc, err := nats.Connect(proxy.url(), nats.MaxReconnects(-1), nats.ReconnectWait(10*time.Millisecond),
		nats.ReconnectHandler(func(*nats.Conn) {
			select {
			case reconnected <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(js, nc, client.Config{
		RequestsStream: tg.Cfg.RequestsStream, ResultsStream: tg.Cfg.ResultsStream,
		RequestPrefix: tg.Cfg.RequestPrefix, ResultPrefix: tg.Cfg.ResultPrefix,
	})
	if err != nil {
		t.Fatal(err)
	}
	tctx, tcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer tcancel()

	const id = "inv-flush-cut"
	proxy.setHold(true) // from now on the client's bytes go nowhere
	type out struct {
		res *envelope.Result
		err error
	}
	done := make(chan out, 1)
	actx, acancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer acancel()
	go func() {
		res, err := c.Await(actx, id)
		done <- out{res, err}
	}()
	recv(tctx, t, proxy.pingHeld()) // Await's flush PING is in flight, unanswered
	proxy.cut()                     // the server restarts: the connection drops
	recv(tctx, t, (<-chan struct{})(reconnected))
	if err := nc.FlushTimeout(10 * time.Second); err != nil { // resubscribed
		t.Fatal(err)
	}
	// The worker publishes the result after the reconnect.
	b, _ := (&envelope.Result{InvocationID: id, Status: envelope.StatusCompleted, Content: "done"}).Encode()
	if _, err := tg.JS.Publish(tctx, tg.Cfg.ResultSubject(id), b); err != nil {
		t.Fatal(err)
	}
	o := recv(tctx, t, done)
	if o.err != nil {
		t.Fatalf("Await = %v; want the result published after the reconnect (the connection was only reconnecting)", o.err)
	}
	if o.res.Content != "done" {
		t.Fatalf("Await = %+v", o.res)
	}
}

// pingProxy forwards TCP to a NATS server; in hold mode it drops what the
// client sends and signals once that included a PING.
type pingProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	hold   bool
	held   chan struct{}
	signal bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startPingProxy(t *testing.T, target string) *pingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pingProxy{ln: ln, held: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
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
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() {
				defer p.wg.Done()
				defer func() { _ = s.Close() }()
				buf := make([]byte, 32<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						p.mu.Lock()
						hold := p.hold
						if hold && !p.signal && bytes.Contains(buf[:n], []byte("PING\r\n")) {
							p.signal = true
							close(p.held)
						}
						p.mu.Unlock()
						if !hold {
							if _, werr := s.Write(buf[:n]); werr != nil {
								return
							}
						}
					}
					if err != nil {
						return
					}
				}
			}()
			go func() { defer p.wg.Done(); _, _ = io.Copy(c, s); _ = c.Close() }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *pingProxy) url() string { return "nats://" + p.ln.Addr().String() }

func (p *pingProxy) pingHeld() <-chan struct{} { return p.held }

func (p *pingProxy) setHold(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = on
}

func (p *pingProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.hold = false
}
