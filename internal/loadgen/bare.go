package loadgen

import (
	"context"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/config"
)

// runBare is the first baseline: the same requests published to a
// topology like the fleet's and consumed with the same fetch loop, each
// message only acked. Its "result" is the ack (in process, no publish).
func runBare(ctx context.Context, e *env, cfg Config) (*Phase, error) {
	p := &Phase{Name: "bare", Description: "JetStream publish (PubAck) + fetch + ack, nothing else"}
	sc := e.topology("bare", cfg.Concurrency)
	if err := e.ensure(ctx, sc); err != nil {
		return nil, err
	}
	cl, err := newClient(e, sc)
	if err != nil {
		return nil, err
	}
	w := newWaiter()
	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	for k := range cfg.Workers {
		nc, err := nats.Connect(e.natsURL, nats.Name(fmt.Sprintf("loadgen-bare-%d", k)))
		if err != nil {
			return nil, fmt.Errorf("loadgen: bare: connect %s: %w", config.RedactNATSURL(e.natsURL), config.RedactConnectError(err, e.natsURL))
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return nil, fmt.Errorf("loadgen: bare: %w", err)
		}
		cons, err := js.Consumer(ctx, sc.RequestsStream, sc.WorkerConsumer)
		if err != nil {
			return nil, fmt.Errorf("loadgen: bare: consumer: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			consume(cctx, cons, cfg.Concurrency, func(m jetstream.Msg) {
				id := m.Headers().Get(jetstream.MsgIDHeader)
				if err := m.Ack(); err != nil {
					w.done(id, "ack failed")
					return
				}
				w.done(id, "acked")
			})
		}()
	}
	rss := startRSS(ctx)
	cpu := startCPU(ctx, e.rdb, e.nats, nil)
	err = load{n: cfg.N, window: cfg.Window, timeout: cfg.Timeout, idPrefix: "lg-" + e.run + "-bare",
		submit: cl.submit, wait: w}.run(ctx, p)
	p.PeakRSSBytes, p.RSSSource = rss.finish()
	cpu.finish(ctx, p)
	return p, err
}
