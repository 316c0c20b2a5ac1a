package dlq

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// headerReserve is what Publish leaves of the server's max payload for the
// headers when it has to cut a large request.
const headerReserve = 1024

// EntryFieldsReserve is what MaxWholeRequest leaves of the largest entry
// for a dead letter's own fields (ids, class, a reason of at most 200
// characters, times, counts, the tools completed: at most
// MaxToolsCompletedSize of them).
const EntryFieldsReserve = 8 << 10

// MaxWholeRequest is the largest request a dead letter carries whole on a
// server whose max payload is maxPayload: Publish cuts a larger one to fit
// that max payload less the headers' room, and MaxStoredEntry (what a file
// store takes, whatever the max payload), and a cut request cannot be
// replayed. The worker refuses larger requests up front (BAD_INPUT). 0 when
// maxPayload leaves no room.
func MaxWholeRequest(maxPayload int64) int {
	entry := min(max(0, maxPayload-headerReserve), MaxStoredEntry)
	return max(0, int(entry)-EntryFieldsReserve)
}

// Publisher writes entries to the DLQ stream. It is safe for concurrent use.
type Publisher struct {
	js  jetstream.JetStream
	cfg Config
	now func() time.Time
}

// NewPublisher returns a Publisher on js for cfg (zero fields default).
func NewPublisher(js jetstream.JetStream, cfg Config) *Publisher {
	return &Publisher{js: js, cfg: cfg.WithDefaults(), now: time.Now}
}

// Publish writes e to <Prefix>.<class>.<agent> and waits for the PubAck. A
// duplicate (the same EntryMsgID, dlq-<invocation_id>-<replay_count>, within
// the stream's duplicate window) is not an error: the returned PubAck has Duplicate set
// and the stored entry is the first one.
//
// Publish completes e in place before it encodes it: V; FailedAt (now when
// zero, UTC) and FirstFailedAt (FailedAt when zero); Reason sanitised with
// tool.SanitizeString; Agent set to UnknownAgent when it is not a valid
// name; and an InvocationID that is empty or invalid replaced with
// DerivedInvocationID(e.SourceSeq) (the original stays in the request). An
// entry without a class, or with neither a valid invocation id nor a
// SourceSeq, is rejected with an error matching ErrInvalidEntry. When the
// entry does not fit the connection's max payload (and MaxStoredEntry) the
// request is cut (see Entry); a long ToolsCompleted is always bounded first
// (see EncodeToFit).
func (p *Publisher) Publish(ctx context.Context, e *Entry) (*jetstream.PubAck, error) {
	if err := p.normalise(e); err != nil {
		return nil, err
	}
	return p.publish(ctx, e, EntryMsgID(e))
}

// PublishAsReceived writes e as Publish does, for the dead letter of a
// request message as it came that records no failure generation of its
// invocation (a request refused as BAD_INPUT, or one the worker could not
// decode): its Nats-Msg-Id is SourceMsgID(e.SourceSeq, e.ReplayCount), not
// the invocation's MsgID. That id is the one the invocation's first real
// failure in the same replay generation takes: a producer's resend of the
// refused invocation id (once the requests' duplicate window has passed)
// that then failed was dropped as a duplicate of the refusal, and its work
// was never replayed (found in review, twenty-third session). An entry
// without a SourceSeq is rejected with an error matching ErrInvalidEntry.
func (p *Publisher) PublishAsReceived(ctx context.Context, e *Entry) (*jetstream.PubAck, error) {
	if e != nil && e.SourceSeq == 0 {
		return nil, &DecodeError{Reason: "an entry published as received needs its source_seq"}
	}
	if err := p.normalise(e); err != nil {
		return nil, err
	}
	return p.publish(ctx, e, SourceMsgID(e.SourceSeq, e.ReplayCount))
}

// publish encodes the normalised e and writes it with the message id msgID.
func (p *Publisher) publish(ctx context.Context, e *Entry, msgID string) (*jetstream.PubAck, error) {
	data, err := e.EncodeToFit(int(p.js.Conn().MaxPayload()) - headerReserve)
	if err != nil {
		return nil, err
	}
	msg := &nats.Msg{
		Subject: envelope.DLQSubject(p.cfg.Prefix, e.Class, e.Agent),
		Data:    data,
		Header:  nats.Header{},
	}
	msg.Header.Set(HeaderClass, e.Class)
	msg.Header.Set(HeaderAgent, e.Agent)
	msg.Header.Set(HeaderInvocationID, e.InvocationID)
	msg.Header.Set(HeaderReplayCount, strconv.Itoa(e.ReplayCount))
	msg.Header.Set(HeaderEntryVersion, strconv.Itoa(e.V))
	ack, err := p.js.PublishMsg(ctx, msg,
		jetstream.WithMsgID(msgID),
		jetstream.WithExpectStream(p.cfg.Stream))
	if err != nil {
		return nil, fmt.Errorf("dlq: publish %s (%s): %w", e.InvocationID, e.Class, err)
	}
	return ack, nil
}

func (p *Publisher) normalise(e *Entry) error {
	if e == nil {
		return &DecodeError{Reason: "nil entry"}
	}
	e.V = Version
	if !classRE.MatchString(e.Class) {
		return &DecodeError{Reason: fmt.Sprintf("class %q is not [A-Z][A-Z0-9_]*", e.Class)}
	}
	if !envelope.ValidID(e.InvocationID) {
		if e.SourceSeq == 0 {
			return &DecodeError{Reason: "no valid invocation_id and no source_seq to derive one"}
		}
		e.InvocationID = DerivedInvocationID(e.SourceSeq)
	}
	e.Agent = AgentToken(e.Agent)
	e.Reason = tool.SanitizeString(e.Reason)
	if e.FailedAt.IsZero() {
		e.FailedAt = p.now().UTC()
	}
	if e.FirstFailedAt.IsZero() || e.FirstFailedAt.After(e.FailedAt) {
		e.FirstFailedAt = e.FailedAt
	}
	if e.ReplayCount < 0 {
		e.ReplayCount = 0
	}
	if e.RequestSize == 0 {
		e.RequestSize = len(e.OriginalRequest())
	}
	return e.check()
}
