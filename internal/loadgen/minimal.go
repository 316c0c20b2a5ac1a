package loadgen

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// minimalDescription says what the minimal consumer does per invocation on
// Redis; minimalKVDescription on NATS KV (--embedded), where the refund is
// a plain put, without the amount check the fleet's NATS KV orders make.
const (
	minimalDescription   = "hand-written: 6 session events in 3 appends (RPUSH; each model response with what came before it, as the fleet), get_order read, claim (SET NX), the refund (the demo orders' booking, as the fleet's tool), completion (SET), result publish (PubAck), ack"
	minimalKVDescription = "hand-written on NATS KV: 6 session events in 3 puts (each model response with what came before it), get_order read, claim (create), refund record (a put, no amount check: cheaper than the fleet's booking), completion (put), result publish (PubAck), ack"
)

// minimalEvent is a session event of the minimal consumer, about the size
// and shape of the fleet's.
type minimalEvent struct {
	InvocationID string         `json:"invocation_id"`
	Author       string         `json:"author"`
	Timestamp    time.Time      `json:"timestamp"`
	Content      map[string]any `json:"content"`
}

// minimalConsumer runs one invocation with only the I/O it needs.
type minimalConsumer struct {
	js      jetstream.JetStream
	sc      streams.Config
	store   minimalStore
	latency time.Duration
	name    string
}

// handle runs one message: model turns are simulated by sleeping the model
// latency; the tools' reads and effect, the appends, the claim and the
// completion are real round trips, in the order the fleet does them.
func (c *minimalConsumer) handle(ctx context.Context, m jetstream.Msg) error {
	var req envelope.Request
	if err := json.Unmarshal(m.Data(), &req); err != nil {
		_ = m.Term()
		return fmt.Errorf("decode: %w", err)
	}
	start := time.Now()
	sess := req.UserID + ":" + req.SessionID
	order := orderOf(req.Message.Text())
	amount := refundable[order] // the whole amount, as the simulated model asks
	// event encodes one session event; add stores events in one append
	// (or reports the first encoding error).
	var encErr error
	event := func(author string, content map[string]any) []byte {
		b, err := json.Marshal(minimalEvent{InvocationID: req.InvocationID, Author: author, Timestamp: time.Now(), Content: content})
		if err != nil && encErr == nil {
			encErr = err
		}
		return b
	}
	add := func(evs ...[]byte) error {
		if encErr != nil {
			return encErr
		}
		return c.store.appendEvents(ctx, sess, evs...)
	}
	model := func() { sleepCtx(ctx, c.latency) }
	call := func(name string, args map[string]any) map[string]any {
		return map[string]any{"role": "model", "parts": []any{map[string]any{"function_call": map[string]any{"name": name, "args": args}}}}
	}
	answer := func(name string, resp map[string]any) map[string]any {
		return map[string]any{"role": "user", "parts": []any{map[string]any{"function_response": map[string]any{"name": name, "response": resp}}}}
	}
	// The appends follow the fleet's rule: each model response is stored
	// before its tools run, together with the events before it (the user
	// message, the last tool step's responses).
	user := event("user", map[string]any{"role": "user", "parts": []any{map[string]any{"text": req.Message.Text()}}})
	var refundResp []byte
	steps := []func() error{
		func() error {
			model()
			return add(user, event("support", call("get_order", map[string]any{"order_id": order})))
		},
		func() error { return c.store.refundedCents(ctx, order) },
		func() error {
			resp := event("support", answer("get_order", map[string]any{"status": "ok", "amount_cents": amount}))
			model()
			return add(resp, event("support", call("refund_order", map[string]any{"order_id": order, "amount_cents": amount, "reason": "customer request"})))
		},
		func() error {
			sum := sha256.Sum256([]byte(req.InvocationID + "\x00refund_order\x00" + order + "\x00" + strconv.Itoa(amount)))
			key := "support:refund_order:" + hex.EncodeToString(sum[:])
			refundResp = event("support", answer("refund_order", map[string]any{"status": "ok", "refunded_cents": amount}))
			ok, err := c.store.claim(ctx, key, c.name)
			if err != nil {
				return err
			}
			if !ok {
				// Claimed before: skip the effect if its result is stored;
				// a claim without one is another delivery's, still running
				// (or dead: its TTL frees the key), so come back later.
				done, err := c.store.completed(ctx, key)
				if err == nil && !done {
					err = errClaimedElsewhere
				}
				return err
			}
			result := `{"status":"ok","order_id":"` + order + `","refunded_cents":` + strconv.Itoa(amount) + `}`
			switch err := c.store.refund(ctx, req.InvocationID, order, amount, key); {
			case errors.Is(err, support.ErrAmountTooLarge):
				// Orders shared by more than 100 in flight: the tool answers
				// an error map, as the fleet's does.
				result = `{"status":"error","error":"amount_too_large"}`
			case err != nil:
				// The effect did not happen: free the key for the
				// redelivery (it would otherwise skip the refund).
				if rerr := c.store.release(context.WithoutCancel(ctx), key); rerr != nil {
					err = errors.Join(err, rerr)
				}
				return err
			}
			return c.store.complete(ctx, key, []byte(result))
		},
		func() error {
			model()
			return add(refundResp, event("support", map[string]any{"role": "model", "parts": []any{map[string]any{"text": "Refunded " + strconv.Itoa(amount) + " cents for order " + order + "."}}}))
		},
	}
	for _, s := range steps {
		if err := s(); err != nil {
			_ = m.NakWithDelay(time.Second)
			return err
		}
	}
	res := &envelope.Result{V: envelope.Version, InvocationID: req.InvocationID, Status: envelope.StatusCompleted,
		Content: "Refunded " + strconv.Itoa(amount) + " cents for order " + order + ".", ModelCalls: 3, Attempts: 1,
		ToolsRun: []string{"get_order", "refund_order"}, DurationMS: time.Since(start).Milliseconds()}
	data, err := res.Encode()
	if err != nil {
		return err
	}
	if _, err := c.js.Publish(ctx, c.sc.ResultSubject(req.InvocationID), data); err != nil {
		_ = m.NakWithDelay(time.Second)
		return fmt.Errorf("publish result: %w", err)
	}
	return m.Ack()
}

// errClaimedElsewhere: the refund's key is claimed and holds no result yet.
var errClaimedElsewhere = errors.New("loadgen: minimal: the refund's key is claimed by another delivery")

// refundable is each demo order's total, which the simulated model refunds.
var refundable = func() map[string]int {
	m := map[string]int{}
	for _, o := range support.DemoOrders() {
		m[o.ID] = o.TotalCents
	}
	return m
}()

// orderOf finds the order id in the request text ("... order A-1042, ...").
func orderOf(text string) string {
	for i := 0; i+2 < len(text); i++ {
		if text[i] == 'A' && text[i+1] == '-' {
			j := i + 2
			for j < len(text) && text[j] >= '0' && text[j] <= '9' {
				j++
			}
			return text[i:j]
		}
	}
	return "A-1000"
}

func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// runMinimal is the second baseline. name is the phase's name ("minimal",
// or "minimal_r2"… in later rounds): its streams, keys and invocation ids
// are its own.
func runMinimal(ctx context.Context, e *env, cfg Config, name string) (*Phase, error) {
	p := &Phase{Name: name, Description: minimalDescription}
	if e.rdb == nil {
		p.Description = minimalKVDescription
	}
	sc := e.topology(name, cfg.Concurrency)
	if err := e.ensure(ctx, sc); err != nil {
		return nil, err
	}
	var store minimalStore
	var reset func(ctx context.Context, orderID string) error
	if e.rdb != nil {
		prefix := e.keyPrefix(name)
		store, reset = newRedisMinimal(e.rdb, prefix), orderReset(e, prefix)
	} else {
		bucket := "LG_MIN_" + e.run
		if name != "minimal" {
			bucket = "LG_" + strings.ToUpper(name) + "_" + e.run
		}
		kv, err := newKVMinimal(ctx, e.js, bucket)
		if err != nil {
			return nil, err
		}
		store = kv
	}
	cl, err := newClient(e, sc)
	if err != nil {
		return nil, err
	}
	w := newWaiter()
	sub, err := subscribeResults(e.nc, sc.ResultPrefix, w)
	if err != nil {
		return nil, fmt.Errorf("loadgen: minimal: subscribe: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	errs := make(chan error, 1)
	for k := range cfg.Workers {
		nc, err := nats.Connect(e.natsURL, nats.Name(fmt.Sprintf("loadgen-minimal-%d", k)))
		if err != nil {
			return nil, fmt.Errorf("loadgen: minimal: connect %s: %w", config.RedactNATSURL(e.natsURL), config.RedactConnectError(err, e.natsURL))
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return nil, fmt.Errorf("loadgen: minimal: %w", err)
		}
		cons, err := js.Consumer(ctx, sc.RequestsStream, sc.WorkerConsumer)
		if err != nil {
			return nil, fmt.Errorf("loadgen: minimal: consumer: %w", err)
		}
		mc := &minimalConsumer{js: js, sc: sc, store: store, latency: cfg.Latency, name: fmt.Sprintf("minimal-%s-%d", e.run, k)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			consume(cctx, cons, cfg.Concurrency, func(m jetstream.Msg) {
				if err := mc.handle(cctx, m); err != nil && cctx.Err() == nil {
					select {
					case errs <- err:
					default:
					}
				}
			})
		}()
	}
	stopProfile, err := startProfile(cfg.MinimalCPUProfile)
	if err != nil {
		return nil, err
	}
	idPrefix := "lg-" + e.run + "-" + name
	rss := startRSS(ctx)
	cpu := startCPU(ctx, e.rdb, e.nats, nil)
	err = load{n: cfg.N, window: cfg.Window, timeout: cfg.Timeout, idPrefix: idPrefix,
		submit: cl.submit, wait: w, orders: pool(cfg, reset)}.run(ctx, p)
	stopProfile()
	p.PeakRSSBytes, p.RSSSource = rss.finish()
	cpu.finish(ctx, p)
	select {
	case herr := <-errs:
		if err == nil && p.Lost > 0 {
			err = fmt.Errorf("loadgen: minimal: %w", herr)
		}
	default:
	}
	recs, rerr := store.refunds(ctx)
	if rerr != nil {
		return p, fmt.Errorf("loadgen: minimal: read refunds: %w", rerr)
	}
	if p.Refunds, p.DuplicateRefunds, p.refundsByID, rerr = countRefunds(recs, idPrefix); rerr != nil {
		return p, rerr
	}
	return p, err
}

// pool returns an order pool when every in-flight invocation can have an
// order of its own, else nil. On Redis the minimal consumer books refunds
// as the fleet does, so its pool resets orders (reset) as the framework
// phase's does; on NATS KV it books nothing (reset is nil) and the pool
// only keeps the submission pattern identical.
func pool(cfg Config, reset func(ctx context.Context, orderID string) error) *orderPool {
	if cfg.Window > maxOrders {
		return nil
	}
	return newOrderPool(reset)
}
