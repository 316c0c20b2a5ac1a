package producercli_test

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

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/client/clienttest"
)

// reviewCutProxy forwards TCP to a NATS server; in swallow mode it drops
// what the client sends and signals once a JetStream API request was
// dropped; cut closes every connection (a server restart as the client sees
// it) and forwards again. (The same technique as pkg/client's
// TestAwaitSeesALiveResultAfterALookupLostInARestart.)
type reviewCutProxy struct {
	ln        net.Listener
	mu        sync.Mutex
	swallow   bool
	dropped   bytes.Buffer
	signalled bool
	swallowed chan struct{}
	conns     []net.Conn
	wg        sync.WaitGroup
}

func startReviewCutProxy(t *testing.T, target string) *reviewCutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &reviewCutProxy{ln: ln, swallowed: make(chan struct{})}
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

func (p *reviewCutProxy) clientToServer(c, s net.Conn) {
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

func (p *reviewCutProxy) setSwallow(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.swallow = on
}

func (p *reviewCutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.swallow = false
}

// Regression (found in review, seventeenth session): A NATS server restart mid-batch: the producer reconnects (nats.go does so
// by itself) and the worker completes the line's request. But RunBatch first
// looks the line's stored result up with the batch's own context, unbounded
// by the lookupLimit that Await got for exactly this case (README: "each
// look-up while awaiting is bounded (2 s): one lost in a server restart
// (nats.go does not resend it) held Await until --timeout, and a completed
// invocation was reported as a timeout"). The lost look-up runs into the
// JetStream client's default 5 s timeout and the line is reported as
// "timeout" (no result within --timeout, exit 4) although it was never
// submitted and the server was back long before.
func TestBatchSurvivesALookupLostInAServerRestart(t *testing.T) {
	tg := streamstest.Embedded(t)
	w := clienttest.Start(t, tg.JS, tg.Cfg, clienttest.Echo)
	proxy := startReviewCutProxy(t, strings.TrimPrefix(tg.NC.ConnectedUrl(), "nats://"))

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
	c, err := client.New(js, nc, producercli.ClientConfig(tg.Cfg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Warm the client's results-stream handle, so that the first JetStream
	// API request of the batch is the line's look-up.
	if _, err := c.Lookup(ctx, "warm-up"); err == nil {
		t.Fatal("test premise: warm-up has a result")
	}

	lines, err := producercli.ParseBatch(strings.NewReader(
		`{"invocation_id":"restart-1","agent":"support","user_id":"u1","session_id":"s1","text":"hello"}` + "\n"))
	if err != nil || len(lines) != 1 || lines[0].Err != nil {
		t.Fatalf("test premise: %+v %v", lines, err)
	}
	proxy.setSwallow(true)
	type out struct {
		res []producercli.LineResult
		err error
	}
	done := make(chan out, 1)
	// The batch's context has no deadline, as the CLI's (signals only).
	bctx, bcancel := context.WithCancel(context.Background())
	defer bcancel()
	go func() {
		res, err := producercli.RunBatch(bctx, c, lines, producercli.BatchOptions{Concurrency: 1, Timeout: 30 * time.Second})
		done <- out{res, err}
	}()
	select {
	case <-proxy.swallowed: // the line's look-up is in flight and will never be answered
	case <-ctx.Done():
		t.Fatal("no look-up sent")
	}
	proxy.cut() // the server restarts
	select {
	case <-reconnected:
	case <-ctx.Done():
		t.Fatal("no reconnect")
	}
	var o out
	select {
	case o = <-done:
	case <-ctx.Done():
		bcancel()
		o = <-done
		t.Fatalf("batch did not end: %+v", o.res)
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	r := o.res[0]
	if r.Outcome != producercli.OutcomeCompleted {
		t.Fatalf("line 1 after a server restart: outcome %q (submitted %v, err %v), worker runs %v; want completed: the server was back and the request was never sent",
			r.Outcome, r.Submitted, r.Err, w.Runs())
	}
}
