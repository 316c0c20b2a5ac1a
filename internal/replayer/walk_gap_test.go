package replayer

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// lossyProxy forwards TCP to target. Once armed, after `after` bytes from the
// server it silently discards the next `lose` bytes (lost in the network)
// and then closes both sides of that connection (a network blip). Later
// connections are forwarded faithfully.
type lossyProxy struct {
	ln          net.Listener
	target      string
	armed       atomic.Bool
	after, lose int64
	fired       atomic.Bool
}

func (p *lossyProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *lossyProxy) handle(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	var once sync.Once
	closeBoth := func() { once.Do(func() { c.Close(); s.Close() }) }
	go func() { _, _ = io.Copy(s, c); closeBoth() }()
	buf := make([]byte, 32*1024)
	var seen int64
	var dropped int64
	for {
		n, err := s.Read(buf)
		if n > 0 {
			if p.armed.Load() && !p.fired.Load() {
				seen += int64(n)
				if seen > p.after {
					dropped += int64(n)
					if dropped >= p.lose {
						p.fired.Store(true)
						closeBoth()
						return
					}
					continue // lost
				}
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				closeBoth()
				return
			}
		}
		if err != nil {
			closeBoth()
			return
		}
	}
}

// A walk that loses deliveries (bytes lost on the way, then a reconnect)
// must not yield a plan with a hole in it: the batched removal would purge
// the entries in the hole without replaying them. Plan fails instead, and
// every entry is either replayed or still in the DLQ.
func TestWalkThatLosesDeliveriesFails(t *testing.T) {
	x := newFx(t, false)
	ids := x.seed("gap", 3000, "SERVER", 0) // one subject
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := &lossyProxy{ln: ln, target: strings.TrimPrefix(x.url, "nats://"), after: 200 << 10, lose: 100 << 10}
	go p.serve()
	x.cfg.NATS.URL = "nats://" + ln.Addr().String() // the replayer goes through the proxy
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f, err := OpenFleet(ctx, x.cfg, false, nopLog())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p.armed.Store(true)
	plan, err := Plan(ctx, f, Selection{MaxReplays: 3})
	if !p.fired.Load() {
		t.Fatalf("the proxy never dropped anything (plan of %d, %v): the test proves nothing", len(plan), err)
	}
	if err == nil {
		for i := 1; i < len(plan); i++ {
			if plan[i].Item.Seq != plan[i-1].Item.Seq+1 {
				t.Fatalf("Plan returned no error but its entries jump from seq %d to %d", plan[i-1].Item.Seq, plan[i].Item.Seq)
			}
		}
		if err := Execute(ctx, f, plan, ExecOptions{Concurrency: 8}); err != nil {
			t.Fatal(err)
		}
	} else if !errors.Is(err, ErrWalkInterrupted) {
		t.Logf("Plan failed another way: %v", err)
	}
	left, replays := x.dlqIDs(), x.requestMsgIDs()
	if lost := len(ids) - len(left) - len(replays); lost != 0 {
		t.Fatalf("%d DLQ entries were removed without being replayed", lost)
	}
}
