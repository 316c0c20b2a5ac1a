package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Receipt is the server's acknowledgement of a submitted request.
type Receipt struct {
	// InvocationID is the request's invocation id.
	InvocationID string
	// Stream and Sequence locate the stored request.
	Stream   string
	Sequence uint64 // Sequence is the request's stream sequence.
	// Duplicate is set when the server already had a request with this
	// invocation id within the duplicate window: nothing new was stored,
	// and the earlier request's result is the one to await.
	Duplicate bool
}

// NewInvocationID returns a fresh random invocation id (a UUID, which is
// subject-safe).
func NewInvocationID() string { return uuid.NewString() }

// Submit publishes req and returns its invocation id; see Send. A duplicate
// is not an error (use Send to tell).
func (c *Client) Submit(ctx context.Context, req *envelope.Request) (string, error) {
	r, err := c.Send(ctx, req)
	if err != nil {
		return "", err
	}
	return r.InvocationID, nil
}

// Send publishes req to <RequestPrefix>.<agent> with Nats-Msg-Id = the
// invocation id and waits for the PubAck. It sets req.InvocationID to a new
// id when it is empty and req.V when it is zero, then validates req like the
// worker does (an *envelope.InvalidError when it fails) and checks its size:
// at most Config.MaxRequestSize and what the worker takes on this server
// (dlq.MaxWholeRequest of the server's max_payload, its max_payload less
// 9 KiB, so that a dead letter carries the request whole: less than
// Config.MaxRequestSize's default on a server whose max_payload is under
// 1 MiB less 7 KiB), and with its headers at most the server's max_payload
// (an *envelope.InvalidError too). A publish that failed or got
// no PubAck is a *PublishError (the request may be stored); one the stream
// refused in its PubAck is a *RefusedError (it is not). A duplicate PubAck
// is reported in the Receipt, not as an error.
func (c *Client) Send(ctx context.Context, req *envelope.Request) (*Receipt, error) {
	data, err := c.prepare(req)
	if err != nil {
		return nil, err
	}
	return c.publish(ctx, req, data)
}

// Check refuses req as Send would before publishing it (not valid, or
// larger than the client's limit, than what the worker takes on this
// server, or than the server's max_payload with the headers Send adds),
// without sending anything or changing req: a caller
// that looks an id up before it sends checks the request first, so that a
// request Send would refuse is refused whatever result is stored.
func (c *Client) Check(req *envelope.Request) error {
	if req == nil {
		_, err := c.prepare(nil)
		return err
	}
	r := *req
	_, err := c.prepare(&r)
	return err
}

// prepare is Send up to the publish: it completes req (InvocationID, V),
// validates it, checks its size and returns it encoded.
func (c *Client) prepare(req *envelope.Request) ([]byte, error) {
	if req == nil {
		return nil, fmt.Errorf("client: submit: %w", &envelope.InvalidError{Reason: "nil request"})
	}
	if req.InvocationID == "" {
		req.InvocationID = NewInvocationID()
	}
	if req.V == 0 {
		req.V = envelope.Version
	}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("client: submit: %w", err)
	}
	data, err := req.Encode()
	if err != nil {
		return nil, fmt.Errorf("client: submit %s: encode: %w", req.InvocationID, err)
	}
	if len(data) > c.cfg.MaxRequestSize {
		return nil, fmt.Errorf("client: submit %s: %w", req.InvocationID,
			&envelope.InvalidError{Reason: fmt.Sprintf("request is %d bytes, limit %d", len(data), c.cfg.MaxRequestSize)})
	}
	// The worker refuses (BAD_INPUT) a request larger than a dead letter
	// carries whole on this server, as internal/worker's maxRequestBytes
	// does (found in review, twenty-fifth session: on a server with a
	// small max_payload such a request was stored and dead-lettered).
	maxPayload := c.js.Conn().MaxPayload()
	if whole := dlq.MaxWholeRequest(maxPayload); whole > 0 && len(data) > whole {
		return nil, fmt.Errorf("client: submit %s: %w", req.InvocationID,
			&envelope.InvalidError{Reason: fmt.Sprintf("request is %d bytes, the worker takes %d on this server (max_payload %d)", len(data), whole, maxPayload)})
	}
	// The server's max_payload counts the headers this publish adds, too.
	if limit, n := maxPayload, len(data)+publishHeaderBytes(req.InvocationID, c.cfg.RequestsStream); limit > 0 && int64(n) > limit {
		return nil, fmt.Errorf("client: submit %s: %w", req.InvocationID,
			&envelope.InvalidError{Reason: fmt.Sprintf("request is %d bytes with its headers, the server takes %d", n, limit)})
	}
	return data, nil
}

// publish is Send's publish of req, encoded as data, and its PubAck.
func (c *Client) publish(ctx context.Context, req *envelope.Request, data []byte) (*Receipt, error) {
	msg := &nats.Msg{Subject: envelope.RequestSubject(c.cfg.RequestPrefix, req.Agent), Data: data}
	ack, err := c.js.PublishMsg(ctx, msg,
		jetstream.WithMsgID(req.InvocationID),
		jetstream.WithExpectStream(c.cfg.RequestsStream))
	var refusal *jetstream.APIError
	switch {
	case errors.As(err, &refusal): // only a PubAck carries one: the stream answered
		return nil, &RefusedError{InvocationID: req.InvocationID, Err: err}
	case err != nil:
		return nil, &PublishError{InvocationID: req.InvocationID, Err: err}
	}
	return &Receipt{InvocationID: req.InvocationID, Stream: ack.Stream, Sequence: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// SubmitAndAwait submits req and awaits its result: AwaitSent with the
// result stored for req's invocation id before the submission. When the
// submission is a duplicate it awaits the earlier request's result. A
// request with an id of its own is validated (as Send does), then looked
// up first (LookupOnce, tried again while it gets no answer, as when it is
// lost in a server restart); when that look-up fails, nothing is submitted
// and its error is returned. A stored result that is Final (any but a
// BAD_INPUT refusal) is returned as it is, and nothing is submitted: the
// worker would answer a resubmission with it and run nothing, so a rerun
// of a job over completed requests queues nothing for the fleet (found in
// review, twenty-fourth session: each was published again). A request
// refused earlier as BAD_INPUT is submitted again, and (after the requests
// stream's duplicate window) gets the result of this run, not the stored
// refusal.
func (c *Client) SubmitAndAwait(ctx context.Context, req *envelope.Request) (*envelope.Result, error) {
	ownID := req != nil && req.InvocationID != "" // else a new id: nothing stored
	data, err := c.prepare(req)
	if err != nil {
		return nil, err
	}
	var before *StoredResult
	if ownID {
		// Each try is bounded (LookupLimit): one lost in a server restart
		// is never answered, and is tried again.
		stored, err := c.LookupOnce(ctx, req.InvocationID)
		for errors.Is(err, ErrLookupLost) {
			stored, err = c.LookupOnce(ctx, req.InvocationID)
		}
		switch {
		case err == nil && stored.Final():
			return stored.Result, nil
		case err == nil:
			before = stored
		case !errors.Is(err, ErrNoResult):
			return nil, fmt.Errorf("client: submit %s: not submitted: %w", req.InvocationID, err)
		}
	}
	rec, err := c.publish(ctx, req, data)
	if err != nil {
		return nil, err
	}
	return c.AwaitSent(ctx, rec, before)
}

// AwaitSent returns the result of the request a Send submitted (rec), given
// the result Lookup found stored for its invocation before that Send
// (before; nil when there was none). That is mostly Await's: the stored
// result when the invocation had finished (the worker answers a
// resubmission of a finished invocation from its record and runs nothing),
// else the next one. A stored BAD_INPUT refusal (RefusedAsBadInput) is the
// exception: the worker refused that request before it recorded anything,
// so the resubmission runs, and AwaitSent returns the result that follows
// the refusal (AwaitAfter its sequence, by its rules: a result at a lower
// sequence counts only when the results stream's leader reports a last
// sequence below the refusal's, the stream recreated since, not when a
// replica or a mirror behind it answers with an earlier refusal; one at
// the refusal's own sequence counts when stored after the refusal, or
// when a look-up since found no result and it is not the refusal itself).
//
// When the requests stream dropped the resubmission as a duplicate
// (rec.Duplicate), the request it duplicates (the one stored at
// rec.Sequence) may be the refused one, whose answer is the refusal, or a
// later resend, whose answer is still to come. AwaitSent asks the server
// (the requests stream's info and the message at rec.Sequence, then the
// stored result again; only on this path) and decides:
//
//   - the refusal is older than the requests stream's duplicate window and
//     1 s of slack (the server keeps an id a little past its window): the
//     duplicated request, stored within the window, came after it: the
//     result that follows the refusal;
//   - the duplicated request is still in the requests stream (a work queue:
//     a worker removes a request once it has answered it) and was stored
//     after the refusal: a resend not answered yet, likewise;
//   - it is still there but was stored before the refusal: the refused
//     request itself (the worker stores the refusal, then removes it): the
//     refusal, at once;
//   - it is gone: its answer was stored before it was removed: the stored
//     result when it is newer than the refusal (by AwaitAfter's rules, the
//     refusal's time known) and not a BAD_INPUT refusal itself, else the
//     refusal, at once.
//
// When AwaitSent answers with the refusal, it returns before.Result itself.
// The times compared are the server's (in a cluster, the two streams'
// leaders' clocks), but "now" is the local clock on a server older than
// 2.10, which does not send its own. Each read is bounded (2 s); a producer
// without STREAM.INFO or STREAM.MSG.GET on the requests stream, or a read
// of it that gets no answer, decides by the last rule alone. While
// JetStream does not answer (no responders) or the result look-up gets no
// answer, AwaitSent asks again until ctx ends: no answer is not taken for
// "nothing newer". A resend that a
// worker requeued (a busy session) is gone from its sequence while a copy
// of it waits: when the refusal is younger than the window, its duplicate
// is answered with the refusal.
func (c *Client) AwaitSent(ctx context.Context, rec *Receipt, before *StoredResult) (*envelope.Result, error) {
	if before == nil || !before.RefusedAsBadInput() {
		return c.Await(ctx, rec.InvocationID)
	}
	if rec.Duplicate {
		res, err := c.answerOfDuplicate(ctx, rec, before)
		if err != nil || res != nil {
			return res, err
		}
	}
	return c.awaitAfter(ctx, rec.InvocationID, before.Seq, before.Time)
}

// publishHeaderBytes is the size of the header block Send's publish
// carries, as the NATS client writes it ("NATS/1.0\r\n", a "Key: value\r\n"
// line per header, a blank line): the server's max_payload counts it.
func publishHeaderBytes(invocationID, stream string) int {
	return len("NATS/1.0\r\n") +
		len(jetstream.MsgIDHeader+": \r\n") + len(invocationID) +
		len(jetstream.ExpectedStreamHeader+": \r\n") + len(stream) +
		len("\r\n")
}
