package redistest

import (
	"bytes"
	"net"
	"sync/atomic"
	"testing"
)

// ReplyDropper is a TCP proxy to a Redis server that, once, forwards a
// request holding its marker and then closes the client's connection
// instead of passing the reply on: the write happened, the client sees a
// reset connection. Tests use it to check that a write whose reply was lost
// is not sent again.
type ReplyDropper struct {
	ln      net.Listener
	target  string
	marker  []byte
	dropped atomic.Bool
}

// NewReplyDropper starts a proxy to target (host:port) that drops the reply
// to the first request containing marker. It stops when the test ends.
func NewReplyDropper(t testing.TB, target, marker string) *ReplyDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &ReplyDropper{ln: ln, target: target, marker: []byte(marker)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.handle(c)
		}
	}()
	return p
}

// Addr is the proxy's host:port.
func (p *ReplyDropper) Addr() string { return p.ln.Addr().String() }

// Dropped reports whether a reply has been dropped.
func (p *ReplyDropper) Dropped() bool { return p.dropped.Load() }

func (p *ReplyDropper) handle(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	drop := make(chan struct{})
	go func() { // client → server
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				// Decide before forwarding, so the reply cannot be passed
				// on before the drop is known.
				last := bytes.Contains(buf[:n], p.marker) && p.dropped.CompareAndSwap(false, true)
				if last {
					close(drop)
				}
				if _, werr := s.Write(buf[:n]); werr != nil || last {
					return
				}
			}
			if err != nil {
				s.Close() // the client went away: end the server side too
				return
			}
		}
	}()
	replies, done := make(chan []byte), make(chan struct{})
	defer close(done)
	go func() { // server → client, through the loop below
		defer close(replies)
		buf := make([]byte, 64<<10)
		for {
			n, err := s.Read(buf)
			if n > 0 {
				select {
				case replies <- append([]byte(nil), buf[:n]...):
				case <-done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		select {
		case <-drop:
			// Redis applied the request once its reply comes: swallow the
			// reply and cut the client off.
			<-replies
			return
		case b, ok := <-replies:
			if !ok {
				return
			}
			select {
			case <-drop:
				// Both were ready and select chose the reply: it is the
				// one to swallow.
				return
			default:
			}
			if _, err := c.Write(b); err != nil {
				return
			}
		}
	}
}
