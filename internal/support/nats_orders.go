package support

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/kvbucket"
)

// RefundsBucket is the NATS KV bucket holding demo refunds in embedded
// mode: one entry per order, {"refunded_cents", "refunds":[...]}, updated
// with a revision check so the amount check and the record are atomic.
const RefundsBucket = "DEMO_REFUNDS"

// NATSOrders is the demo orders service for NATS-only and embedded
// deployments: the catalogue is DemoOrders, refunds are real effects in a KV
// bucket.
type NATSOrders struct {
	kv      jetstream.KeyValue
	catalog map[string]Order
}

type orderRefunds struct {
	RefundedCents int      `json:"refunded_cents"`
	Refunds       []Refund `json:"refunds"`
}

// NewNATSOrders creates (or opens) the bucket.
func NewNATSOrders(ctx context.Context, js jetstream.JetStream, bucket string) (*NATSOrders, error) {
	return OpenNATSOrders(ctx, js, bucket, kvbucket.Configure)
}

// OpenNATSOrders is NewNATSOrders with the bucket opened in mode
// (kvbucket.Existing: only opened, an error if missing).
func OpenNATSOrders(ctx context.Context, js jetstream.JetStream, bucket string, mode kvbucket.Mode) (*NATSOrders, error) {
	if bucket == "" {
		bucket = RefundsBucket
	}
	kv, _, err := kvbucket.Open(ctx, js, jetstream.KeyValueConfig{Bucket: bucket, Description: "agentfleet demo refunds (effects)"}, mode)
	if err != nil {
		return nil, fmt.Errorf("support: refunds %w", err)
	}
	cat := map[string]Order{}
	for _, o := range DemoOrders() {
		o.Status = "delivered"
		cat[o.ID] = o
	}
	return &NATSOrders{kv: kv, catalog: cat}, nil
}

func orderKey(id string) string {
	return "order." + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, id)
}

func (n *NATSOrders) load(ctx context.Context, id string) (orderRefunds, uint64, error) {
	var st orderRefunds
	e, err := n.kv.Get(ctx, orderKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return st, 0, nil
	}
	if err != nil {
		if cerr := ctxEnded(ctx); cerr != nil {
			// Cut short by the caller, not an outage (found in review,
			// twentieth session).
			return st, 0, fmt.Errorf("orders: load %s: %w", id, endedError(cerr, err))
		}
		return st, 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return st, 0, fmt.Errorf("support: corrupt refunds of %s: %w", id, err)
	}
	return st, e.Revision(), nil
}

// Get implements Orders.
func (n *NATSOrders) Get(ctx context.Context, orderID string) (Order, error) {
	o, ok := n.catalog[orderID]
	if !ok {
		return Order{}, ErrOrderNotFound
	}
	st, _, err := n.load(ctx, orderID)
	if err != nil {
		return Order{}, err
	}
	o.RefundedCents = st.RefundedCents
	if o.RefundedCents >= o.TotalCents {
		o.Status = "refunded"
	}
	return o, nil
}

// Refund implements Orders.
func (n *NATSOrders) Refund(ctx context.Context, r Refund) error {
	if r.AmountCents <= 0 {
		return fmt.Errorf("%w: %d cents", ErrAmountNotPositive, r.AmountCents)
	}
	o, ok := n.catalog[r.OrderID]
	if !ok {
		return ErrOrderNotFound
	}
	for attempt := 0; attempt < 100; attempt++ {
		st, rev, err := n.load(ctx, r.OrderID)
		if err != nil {
			return err
		}
		if r.IdempotencyKey != "" {
			for _, done := range st.Refunds {
				if done.IdempotencyKey == r.IdempotencyKey {
					return nil // booked before (the revision check makes this exact)
				}
			}
		}
		if r.AmountCents > o.TotalCents-st.RefundedCents { // not a sum: a huge amount would wrap around
			return ErrAmountTooLarge
		}
		st.RefundedCents += r.AmountCents
		st.Refunds = append(st.Refunds, Refund{InvocationID: r.InvocationID, OrderID: r.OrderID, AmountCents: r.AmountCents, IdempotencyKey: r.IdempotencyKey})
		data, _ := json.Marshal(st)
		if rev == 0 {
			_, err = n.kv.Create(ctx, orderKey(r.OrderID), data)
		} else {
			_, err = n.kv.Update(ctx, orderKey(r.OrderID), data, rev)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !strings.Contains(err.Error(), "wrong last sequence") {
			// A publish that timed out or lost its connection may
			// have been stored: not a plain outage.
			return refundError(ctx, r.OrderID, err, natsNotApplied(err))
		}
	}
	return fmt.Errorf("%w: too many concurrent refunds of %s", ErrUnavailable, r.OrderID)
}

// natsNotApplied reports whether err, from a KV Create or Update, says the
// entry was not stored: the server answered with an error (a JetStream API
// error), no stream took the message, or the key or message was refused by
// the client before sending: an invalid key or subject, an entry larger
// than the server's max payload (an order's refund records outgrowing it),
// a draining connection, a full reconnect buffer. Anything else (a timeout,
// a connection closed while waiting for the acknowledgement; a closed
// connection is not told apart from one closed before sending) may come
// after the server stored it. Found in review, twenty-second session:
// nats.ErrMaxPayload was reported as a refund that may have been booked.
func natsNotApplied(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrInvalidKey) ||
		errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadSubject) ||
		errors.Is(err, nats.ErrHeadersNotSupported) || errors.Is(err, nats.ErrConnectionDraining) ||
		errors.Is(err, nats.ErrReconnectBufExceeded)
}

// Refunds returns every refund record, order by order.
func (n *NATSOrders) Refunds(ctx context.Context) ([]Refund, error) {
	lister, err := n.kv.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	// Stop the lister on an early return, or its subscription lives on.
	defer func() { _ = lister.Stop() }()
	var out []Refund
	for k := range lister.Keys() {
		e, err := n.kv.Get(ctx, k)
		if err != nil {
			return nil, err
		}
		var st orderRefunds
		if err := json.Unmarshal(e.Value(), &st); err != nil {
			return nil, err
		}
		out = append(out, st.Refunds...)
	}
	return out, nil
}
