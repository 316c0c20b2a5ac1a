package producercli_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
)

// publishTestOutageJS answers every publish with no responders (JetStream not
// back yet after a restart) until until, and counts the publishes.
type publishTestOutageJS struct {
	jetstream.JetStream
	until time.Time
	mu    sync.Mutex
	n     int
}

func (j *publishTestOutageJS) PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	j.mu.Lock()
	j.n++
	j.mu.Unlock()
	if time.Now().Before(j.until) {
		return nil, jetstream.ErrNoStreamResponse
	}
	return j.JetStream.PublishMsg(ctx, msg, opts...)
}

// Regression (found in review, twenty-first session): a line's resends
// through an outage keep to the batch's --rate.
// --rate limits submissions per second (to spare the server); a line's
// resends during an outage skip the limiter, so a batch at --rate 2 with
// --concurrency 8 sends many times the rate at the server just while it
// is recovering.
func TestBatchResendsKeepToTheRate(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	js := &publishTestOutageJS{JetStream: tg.JS, until: time.Now().Add(3 * time.Second)}
	c, err := client.New(js, tg.NC, producercli.ClientConfig(tg.Cfg))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range 8 {
		fmt.Fprintf(&b, `{"invocation_id":"rate-%d","agent":"support","user_id":"u1","session_id":"s1","text":"hello"}`+"\n", i)
	}
	lines, err := producercli.ParseBatch(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	// Timeout short: the lines fail after their resends; only the
	// publishes' count matters.
	start := time.Now()
	_, _ = producercli.RunBatch(ctx, c, lines, producercli.BatchOptions{Rate: 2, Concurrency: 8, Timeout: 2500 * time.Millisecond})
	elapsed := time.Since(start)
	js.mu.Lock()
	n := js.n
	js.mu.Unlock()
	if allowed := int(2*elapsed.Seconds()) + 1; n > allowed {
		t.Fatalf("%d publishes in %v at --rate 2 (at most %d allowed): resends bypass the rate limiter", n, elapsed.Round(100*time.Millisecond), allowed)
	}
}
