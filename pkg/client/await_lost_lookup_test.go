package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// cutProxy forwards TCP connections to a NATS server. In swallow mode it
// drops what the client sends and reports when that included a JetStream API
// request; cut then closes every connection, as a server restart (or a
// dropped link) does to a request in flight. New connections are forwarded
// normally again.
type cutProxy struct {
	ln     net.Listener
	target string

	mu        sync.Mutex
	swallow   bool
	dropped   bytes.Buffer
	signalled bool
	swallowed chan struct{}
	conns     []net.Conn
	wg        sync.WaitGroup
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, swallowed: make(chan struct{})}
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
			go func() { defer p.wg.Done(); p.clientToServer(c, s) }()
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

func (p *cutProxy) clientToServer(c, s net.Conn) {
	defer func() { _ = s.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.mu.Lock()
			swallow := p.swallow
			if swallow {
				p.dropped.Write(buf[:n])
				if !p.signalled && bytes.Contains(p.dropped.Bytes(), []byte("$JS.API.")) {
					p.signalled = true
					close(p.swallowed)
				}
			}
			p.mu.Unlock()
			if !swallow {
				if _, werr := s.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *cutProxy) setSwallow(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.swallow = on
}

// cut closes every proxied connection and forwards again.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.swallow = false
}

// Regression (found in review, sixteenth session): Await waits on its subscription and looks the stored result up again now
// and then (doc.go: "So a result published at any moment is seen"). Those
// later look-ups run with Await's whole context: when one's reply is lost
// (the connection to the server drops while it is in flight, as on a
// server restart; nats.go does not resend a request after a reconnect),
// Await sits in that look-up until its deadline, does not read the
// subscription meanwhile, and then reports a timeout, although the result
// was published after the reconnect and delivered to its subscription. A
// producer's send --wait exits 3 and a batch line is "timeout" for an
// invocation that completed.
func TestAwaitSeesALiveResultAfterALookupLostInARestart(t *testing.T) {
	tg := streamstest.Embedded(t)
	proxy := startCutProxy(t, tg.NC.ConnectedUrl()[len("nats://"):])

	reconnected := make(chan struct{}, 1)
	nc, err := nats.Connect("nats://"+proxy.ln.Addr().String(),
		nats.MaxReconnects(-1), nats.ReconnectWait(10*time.Millisecond),
		nats.ReconnectHandler(func(*nats.Conn) {
			select {
			case reconnected <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
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

	// Await found nothing stored and starts waiting: from now on the
	// client's traffic goes nowhere, until the next look-up has been sent.
	const id = "inv-lost-lookup"
	client.SetWaitingHook(c, func(string) { proxy.setSwallow(true) })
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

	tctx, tcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer tcancel()
	recv(tctx, t, (<-chan struct{})(proxy.swallowed)) // a look-up is in flight and will never be answered
	proxy.cut()                                       // the server "restarts": the connection drops
	recv(tctx, t, (<-chan struct{})(reconnected))
	// The subscription is back on the server once a flush after the
	// reconnect returns (nats.go resubscribes first).
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		t.Fatal(err)
	}

	// The worker publishes the result after the restart: it is stored and
	// delivered live to Await's subscription.
	b, _ := (&envelope.Result{InvocationID: id, Status: envelope.StatusCompleted, Content: "done"}).Encode()
	if _, err := tg.JS.Publish(tctx, tg.Cfg.ResultSubject(id), b); err != nil {
		t.Fatal(err)
	}

	o := recv(tctx, t, done)
	if o.err != nil {
		t.Fatalf("Await = %v (context deadline exceeded: %v); want the result stored and delivered after the reconnect",
			o.err, errors.Is(o.err, context.DeadlineExceeded))
	}
	if o.res.Content != "done" {
		t.Fatalf("Await = %+v", o.res)
	}
}
