package natstest

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// CutProxy forwards TCP connections to a NATS server, for tests of what a
// client does when a request is lost in a server restart. In swallow mode
// (SetSwallow) it drops what the client sends and closes Swallowed once
// that included a JetStream API request (SwallowedPing once it included a
// PING, as a flush sends); Cut then closes every connection, as a server
// restart (or a dropped link) does to a request in flight. New connections
// are forwarded normally again.
type CutProxy struct {
	ln net.Listener

	mu        sync.Mutex
	swallow   bool
	dropped   bytes.Buffer
	swallowed signal    // a JetStream API request was dropped
	pinged    signal    // a PING was dropped
	markers   []*signal // SwallowedText's
	conns     []net.Conn
	wg        sync.WaitGroup
}

// signal is a channel closed once the dropped bytes contain a marker.
type signal struct {
	marker string
	done   bool
	ch     chan struct{}
}

func newSignal(marker string) signal { return signal{marker: marker, ch: make(chan struct{})} }

// check closes the channel the first time dropped contains the marker.
func (s *signal) check(dropped []byte) {
	if !s.done && bytes.Contains(dropped, []byte(s.marker)) {
		s.done = true
		close(s.ch)
	}
}

// StartCutProxy listens on a free loopback port and forwards to target
// (host:port). It is closed when the test ends.
func StartCutProxy(t testing.TB, target string) *CutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &CutProxy{ln: ln, swallowed: newSignal("$JS.API."), pinged: newSignal("PING\r\n")}
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
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// URL is the proxy's nats:// URL.
func (p *CutProxy) URL() string { return "nats://" + p.ln.Addr().String() }

// Swallowed is closed once a JetStream API request was dropped in swallow
// mode.
func (p *CutProxy) Swallowed() <-chan struct{} { return p.swallowed.ch }

// SwallowedPing is closed once a PING (a flush's, say) was dropped in
// swallow mode.
func (p *CutProxy) SwallowedPing() <-chan struct{} { return p.pinged.ch }

// SwallowedText is closed once the bytes dropped in swallow mode contain
// marker (a subject, say: a publish's). Call it before SetSwallow.
func (p *CutProxy) SwallowedText(marker string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := newSignal(marker)
	s.check(p.dropped.Bytes())
	p.markers = append(p.markers, &s)
	return s.ch
}

// SetSwallow turns swallow mode on or off.
func (p *CutProxy) SetSwallow(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.swallow = on
}

// Cut closes every proxied connection and forwards again.
func (p *CutProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.swallow = false
}

func (p *CutProxy) clientToServer(c, s net.Conn) {
	defer func() { _ = s.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.mu.Lock()
			swallow := p.swallow
			if swallow {
				p.dropped.Write(buf[:n])
				p.swallowed.check(p.dropped.Bytes())
				p.pinged.check(p.dropped.Bytes())
				for _, m := range p.markers {
					m.check(p.dropped.Bytes())
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

// Connect connects through the proxy, reconnecting at once and for ever
// after a Cut, and returns the connection (closed when the test ends), its
// JetStream handle, and a channel that receives after each reconnect (it
// holds one signal; later ones are dropped until it is read).
func (p *CutProxy) Connect(t testing.TB) (*nats.Conn, jetstream.JetStream, <-chan struct{}) {
	t.Helper()
	reconnected := make(chan struct{}, 1)
	nc, err := nats.Connect(p.URL(),
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
	return nc, js, reconnected
}
