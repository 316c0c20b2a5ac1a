package replayer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Headers added to parked entries (besides the DLQ entry's own).
const (
	// HeaderParkedReason says why the entry was parked.
	HeaderParkedReason = "Agent-Parked-Reason"
	// HeaderParkedAt is when it was parked (RFC 3339).
	HeaderParkedAt = "Agent-Parked-At"
	// HeaderDLQSeq is the entry's sequence in the DLQ stream.
	HeaderDLQSeq = "Agent-DLQ-Seq"
)

// ParkedConfig names the parked stream. Parked entries live in a stream of
// their own, AGENT_DLQ_PARKED on agent.dlq.parked.<class>.<agent>: five
// tokens, so the DLQ stream (agent.dlq.*.*, four tokens) never captures
// them, nothing replays them automatically, and they keep their headers and
// body (with History) as they were.
type ParkedConfig struct {
	// Stream and Prefix name the stream and its subject prefix.
	Stream string
	Prefix string // Prefix is the parked stream's subject prefix.
	// MaxAge is how long parked entries are kept.
	MaxAge time.Duration
	// Replicas is the stream's replication factor.
	Replicas int
}

// Parked writes and reads the parked stream.
type Parked struct {
	js  jetstream.JetStream
	cfg ParkedConfig
}

// StreamConfig returns the parked stream's configuration. Direct get is
// allowed, as on the DLQ stream (streams.Config.DLQStreamConfig): parked
// entries are read one by one with a dlq.Reader, and a direct get answers
// with the entry as stored, within the max payload.
func (p *Parked) StreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        p.cfg.Stream,
		Description: "dead-lettered invocations parked after too many replays (need a person)",
		Subjects:    []string{p.cfg.Prefix + ".*.*"},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      p.cfg.MaxAge,
		Duplicates:  10 * time.Minute,
		AllowDirect: true,
		Replicas:    max(p.cfg.Replicas, 1),
	}
}

// Ensure creates or updates the parked stream (idempotent). Like the
// fleet's streams (streams.Apply) it never lowers the stream's replicas nor
// shortens its max age: parked entries wait for a person, and a replayer run
// with a shorter parked_max_age than the team's must not drop them.
func (p *Parked) Ensure(ctx context.Context) error {
	if _, err := streams.Apply(ctx, p.js, p.StreamConfig(), streams.Keep{MaxAge: true}); err != nil {
		err = fmt.Errorf("parked stream: %w", err)
		if bad := p.refusal(err); bad != nil {
			return bad
		}
		return err
	}
	return nil
}

// refusal returns err as bad configuration (matching app.ErrBadConfig: exit
// 3, not 1) when the server refuses the parked stream on every run, saying
// which key to change; nil for any other error, which a retry may fix. As
// for the worker's streams (app.ServerRefusal), the decision is the API
// error code's, never the message's.
func (p *Parked) refusal(err error) error {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return nil
	}
	switch apiErr.ErrorCode {
	case app.JSStreamSubjectOverlap:
		return fmt.Errorf("%w: %w (another stream already takes the parked subjects %s.*.*, nats stream ls shows which: set "+
			"replay.parked_prefix to a prefix no other stream holds, or remove that stream once its entries are safe)",
			app.ErrBadConfig, err, p.cfg.Prefix)
	case app.JSStreamInvalidConfig:
		return fmt.Errorf("%w: %w (the stream %s exists with settings the server will not change on a live stream, "+
			"retention or storage: it was made by hand or by another tool. Set replay.parked_stream to another name, or "+
			"move its messages elsewhere and delete it (nats stream rm %s) so that the next run creates it)",
			app.ErrBadConfig, err, p.cfg.Stream, p.cfg.Stream)
	case app.JSReplicasNotSupported:
		return fmt.Errorf("%w: %w (streams.replicas above 1 needs a clustered NATS: set streams.replicas to 1, or run a cluster)",
			app.ErrBadConfig, err)
	}
	return nil
}

// Subject returns <prefix>.<class>.<agent>.
func (p *Parked) Subject(class, agent string) string { return p.cfg.Prefix + "." + class + "." + agent }

// ParkedMsgID is the parked copy's Nats-Msg-Id of an entry whose stored
// DLQ message carries no message id of the Publisher's (a hand-written
// entry): its DLQ message id as dlq.EntryMsgID derives it with "parked"
// for "dlq", parked-<invocation_id>-<n> (n the entry's replay count) or,
// for a derived invocation id, parked-seq:<sequence>-<n>. Park names the
// copy of any other entry after its stored id (itemParkedMsgID).
func ParkedMsgID(e *dlq.Entry) string {
	return "parked" + strings.TrimPrefix(dlq.EntryMsgID(e), "dlq")
}

// itemParkedMsgID is the Nats-Msg-Id of the parked copy of the decoded
// entry it: its stored DLQ message id with "parked" for "dlq"
// (parked-<invocation_id>-<n>, or parked-seq:<sequence>-<n> for an entry
// published as received or with a derived id), so parking again after a
// crash between the publish and the delete stores nothing twice, and the
// parked copies of two entries never share an id, as their DLQ ids do not.
// A stored message with no id of that form gets ParkedMsgID's. With
// dlq.EntryMsgID alone a BAD_INPUT refusal (published as received, see
// dlq.SourceMsgID) and its invocation's real dead letter at the same
// replay count shared an id: the second copy was dropped as a duplicate
// and its DLQ entry deleted all the same (found in review, twenty-third
// session).
func itemParkedMsgID(it *dlq.Item) string {
	if stored := storedDLQMsgID(it); strings.HasPrefix(stored, "dlq-") {
		return "parked" + strings.TrimPrefix(stored, "dlq")
	}
	return ParkedMsgID(it.Entry)
}

// parkedRawMsgID is the Nats-Msg-Id of the parked copy of an undecodable
// entry: parked-dlq:<its DLQ sequence>, which no ParkedMsgID takes (no
// invocation id holds ':'; the earlier parked-seq-<n> was ParkedMsgID's for
// an invocation named "seq" at replay n).
func parkedRawMsgID(dlqSeq uint64) string {
	return "parked-dlq:" + strconv.FormatUint(dlqSeq, 10)
}

// Park copies it to the parked stream, recording the entry's own failure in
// its History (a copy too large for the max payload keeps a shorter prefix
// of the request, see dlq.Entry.EncodeToFit). The caller deletes the DLQ
// entry after Park returned. A copy the parked stream drops as a duplicate
// is an error unless the copy stored under its id is of this very DLQ
// entry (parked again after a crash before the delete): the entry is then
// not parked, and must stay in the DLQ.
func (p *Parked) Park(ctx context.Context, it *dlq.Item, reason string, now time.Time) error {
	msg := &nats.Msg{Header: nats.Header{}}
	for k, v := range it.Header {
		msg.Header[k] = append([]string(nil), v...)
	}
	msg.Header.Set(HeaderParkedReason, reason)
	msg.Header.Set(HeaderParkedAt, now.UTC().Format(time.RFC3339))
	msg.Header.Set(HeaderDLQSeq, strconv.FormatUint(it.Seq, 10))
	var id string
	if it.Entry != nil {
		e := *it.Entry
		e.History = append(append([]dlq.Failure(nil), e.History...), dlq.Failure{
			Class: e.Class, Reason: e.Reason, FailedAt: e.FailedAt, ReplayCount: e.ReplayCount,
			DeliveryCount: e.DeliveryCount, Worker: e.Worker,
		})
		id = itemParkedMsgID(it)
		// The copy is larger than the entry (a History item, the parked
		// headers): cut its request further when it would not fit what
		// the headers leave of the max payload, as the Publisher cut it.
		data, err := e.EncodeToFit(int(p.js.Conn().MaxPayload()) - headerBytes(msg.Header) - parkHeaderRoom - len(id) - len(p.cfg.Stream))
		if err != nil {
			return fmt.Errorf("park seq %d: encode: %w", it.Seq, err)
		}
		msg.Subject, msg.Data = p.Subject(e.Class, e.Agent), data
	} else {
		// An undecodable entry is parked as it is, under its subject's tokens.
		class, agent := subjectTokens(it.Subject)
		msg.Subject, msg.Data = p.Subject(class, agent), it.Data
		id = parkedRawMsgID(it.Seq)
	}
	msg.Header.Del(dlq.HeaderMsgID)
	ack, err := p.js.PublishMsg(ctx, msg, jetstream.WithMsgID(id), jetstream.WithExpectStream(p.cfg.Stream))
	if err != nil {
		return fmt.Errorf("park seq %d: %w", it.Seq, err)
	}
	if ack.Duplicate {
		if err := p.sameEntry(ctx, ack.Sequence, it.Seq); err != nil {
			return fmt.Errorf("park seq %d: the parked stream dropped its copy as a duplicate of %s (entry left in the DLQ): %w", it.Seq, id, err)
		}
	}
	return nil
}

// errParkedOther is the error of a parked copy dropped as a duplicate of
// another entry's.
var errParkedOther = errors.New("the parked copy stored under that id is of another DLQ entry")

// sameEntry checks that the parked copy at parkedSeq (a duplicate's PubAck
// names the first copy's sequence) is of the DLQ entry at dlqSeq. A copy
// that cannot be read (purged meanwhile) is an error too: the entry must not
// be deleted on a copy that may not be there.
func (p *Parked) sameEntry(ctx context.Context, parkedSeq, dlqSeq uint64) error {
	if parkedSeq == 0 {
		return fmt.Errorf("%w (the PubAck names no sequence)", errParkedOther)
	}
	stored, err := p.Reader().Get(ctx, parkedSeq)
	if stored == nil {
		return fmt.Errorf("read the parked copy at parked seq %d: %w", parkedSeq, err)
	}
	if got := stored.Header.Get(HeaderDLQSeq); got != strconv.FormatUint(dlqSeq, 10) {
		return fmt.Errorf("%w (parked seq %d was DLQ seq %s)", errParkedOther, parkedSeq, got)
	}
	return nil
}

// parkHeaderRoom is what Park keeps of the max payload, beyond the copied
// headers and the two ids, for the header block's framing and the
// Nats-Msg-Id and Nats-Expected-Stream names the client adds.
const parkHeaderRoom = 256

// headerBytes is the size of h as the client writes it ("Key: value\r\n"
// per value).
func headerBytes(h nats.Header) int {
	n := 0
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// Count returns the number of parked entries (0 when the stream does not
// exist yet).
func (p *Parked) Count(ctx context.Context) (uint64, error) {
	s, err := p.js.Stream(ctx, p.cfg.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("parked stream: %w", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("parked stream: %w", err)
	}
	return info.State.Msgs, nil
}

// Reader returns a dlq.Reader over the parked stream (for list and show).
func (p *Parked) Reader() *dlq.Reader {
	return dlq.NewReader(p.js, dlq.Config{Stream: p.cfg.Stream, Prefix: p.cfg.Prefix})
}

// Exists reports whether the parked stream exists.
func (p *Parked) Exists(ctx context.Context) (bool, error) {
	_, err := p.js.Stream(ctx, p.cfg.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return false, nil
	}
	return err == nil, err
}

// subjectTokens returns the class and agent tokens of <prefix>.<class>.<agent>.
func subjectTokens(subject string) (class, agent string) {
	var toks []string
	start := 0
	for i := 0; i <= len(subject); i++ {
		if i == len(subject) || subject[i] == '.' {
			toks = append(toks, subject[start:i])
			start = i + 1
		}
	}
	if len(toks) < 2 {
		return "UNKNOWN", dlq.UnknownAgent
	}
	return toks[len(toks)-2], toks[len(toks)-1]
}

// view is f with the parked stream in the DLQ's place (replay --parked):
// planning walks it, and the engine removes what it replayed from it. The
// view shares f's connections and is not closed itself.
func (p *Parked) view(f *Fleet) *Fleet {
	v := *f
	v.Reader = p.Reader()
	v.Streams.DLQStream, v.Streams.DLQPrefix = p.cfg.Stream, p.cfg.Prefix
	v.close = nil
	return &v
}
