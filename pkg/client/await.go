package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// StoredResult is a result as stored in AGENT_RESULTS.
type StoredResult struct {
	*envelope.Result
	// Seq is the result's stream sequence: AwaitAfter(Seq) waits for a
	// newer one.
	Seq uint64
	// Time is when the server stored it.
	Time time.Time
}

// classBadInput is taxonomy.BadInput, the error class of a request the
// worker refused before it ran it (not imported: pkg/taxonomy would bring
// the agent packages into every producer).
const classBadInput = "BAD_INPUT"

// RefusedAsBadInput reports whether the stored result is a BAD_INPUT
// refusal (failed, error class BAD_INPUT): the worker refused the request
// (an agent it does not run, a size limit) before it recorded anything, so
// unlike any other finished invocation, a resubmission with the same
// invocation id runs (once the requests stream's duplicate window has
// passed) and gets a newer result; see AwaitSent.
func (s *StoredResult) RefusedAsBadInput() bool {
	return s.Status == envelope.StatusFailed && s.ErrorClass == classBadInput
}

// Final reports whether the stored result answers every resubmission of
// its invocation: any result but a BAD_INPUT refusal (RefusedAsBadInput),
// whatever its status. The worker answers a resubmission of a finished
// invocation from its record and runs nothing (a dead-lettered one runs
// again only when replayed from the DLQ), so sending the request again
// would only queue a copy for the fleet to take and answer with this same
// result. SubmitAndAwait returns a final stored result without sending,
// and producer batch reports one without sending.
func (s *StoredResult) Final() bool { return !s.RefusedAsBadInput() }

// Lookup returns the stored result of invocationID, or an error matching
// ErrNoResult when there is none (one matching jetstream.ErrStreamNotFound
// when the results stream is missing). It does not wait. The server hands a
// result to subscribers before the stream stores it, so a result Await has
// just returned may not be found by Lookup for a moment.
func (c *Client) Lookup(ctx context.Context, invocationID string) (*StoredResult, error) {
	if !envelope.ValidID(invocationID) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidInvocationID, invocationID)
	}
	s, err := c.resultsStream(ctx)
	if err != nil {
		return nil, err
	}
	raw, err := s.GetLastMsgForSubject(ctx, envelope.ResultSubject(c.cfg.ResultPrefix, invocationID))
	if errors.Is(err, nats.ErrNoResponders) {
		err = c.checkResultsStream(ctx, s, err)
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("client: result of %s: %w", invocationID, ErrNoResult)
	}
	if err != nil {
		return nil, fmt.Errorf("client: result of %s: %w", invocationID, err)
	}
	res, err := decode(invocationID, raw.Data)
	if err != nil {
		return nil, err
	}
	return &StoredResult{Result: res, Seq: raw.Sequence, Time: raw.Time}, nil
}

// Await returns the result of invocationID: the stored one if the invocation
// already finished, else the next one published (seen on a subscription or,
// when it was published just as Await began, in the stream, which Await
// looks at again now and then while it waits). It waits until ctx ends
// (then the error matches ctx.Err(), and ErrUnanswered too when none of
// its look-ups was answered: it names the last one's failure, such as no
// JetStream responders); a connection that drops and reconnects meanwhile
// (a server restart, JetStream not answering for a while after it) does
// not end it, one closed for good does, and so does a missing results
// stream or a look-up the connection's permissions refuse (its error
// matches nats.ErrPermissionViolation). Any status is a result: a
// dead_lettered result means the request is parked in the DLQ and may
// complete after a replay (Await again, or AwaitAfter its sequence).
func (c *Client) Await(ctx context.Context, invocationID string) (*envelope.Result, error) {
	return c.AwaitAfter(ctx, invocationID, 0)
}

// AwaitAfter is Await ignoring the stored result a Lookup returned with
// stream sequence afterSeq: it returns the first result published after
// that one (for a resubmission). A stored result counts when its sequence
// is higher; when it is lower, only if the results stream's last sequence
// as its leader reports it (one more request, its info) is below afterSeq:
// the stream, which keeps one result per invocation, was deleted and
// created again since (its sequences started at 1 again; they never go
// down in one stream). A lower one in a stream whose last sequence is not
// below afterSeq is an older result that a replica or a mirror behind the
// leader answered the look-up with (the stream allows direct gets), and
// does not count. A result at afterSeq itself counts when a look-up
// earlier in this call found no result (the earlier one is gone), or when
// it was stored later than the result AwaitAfter first found there (the
// stream recreated while it waits); otherwise it is taken for the earlier
// one (AwaitSent, which knows that one's time, tells them apart). So a
// recreated stream whose last sequence had already passed afterSeq when
// its result was found at a lower one is not seen. With afterSeq > 0 only
// a result the stream has stored counts: a re-publish of the older result
// that the stream drops as a duplicate (same Nats-Msg-Id) still reaches
// the subscription, so a live message only makes AwaitAfter look again.
func (c *Client) AwaitAfter(ctx context.Context, invocationID string, afterSeq uint64) (*envelope.Result, error) {
	return c.awaitAfter(ctx, invocationID, afterSeq, time.Time{})
}

// storedAfter reports whether s, the stored result of invocationID, was
// stored after the one a Lookup returned with sequence seq, stored at t
// (zero: not known); gone says a look-up since found no result. The
// results stream keeps one result per invocation, so a later result of the
// same stream has a higher sequence. One with a lower sequence is newer
// only when the stream's last sequence, as its leader reports it
// (resultsLastSeq), is below seq: the stream was deleted and created again
// since, its sequences starting at 1 again (found in review, twenty-fifth
// session: AwaitAfter waited out its context for a result stored so).
// Otherwise it is an older result answered by a replica or a mirror behind
// the leader (direct gets), not a newer one (found in review of this
// session's fix, twenty-fifth session: AwaitSent could return an earlier
// BAD_INPUT refusal for a resend). One at seq itself is newer when stored
// after t, or when gone and not stored at t (the earlier result itself,
// which keeps its time in every replica and mirror); with neither, a
// caller that does not know t takes it for the earlier one. The error is
// resultsLastSeq's.
func (c *Client) storedAfter(ctx context.Context, invocationID string, s *StoredResult, seq uint64, t time.Time, gone bool) (bool, error) {
	switch {
	case s.Seq > seq:
		return true, nil
	case s.Seq == seq && !t.IsZero():
		return s.Time.After(t) || (gone && !s.Time.Equal(t)), nil
	case s.Seq == seq:
		return gone, nil
	}
	last, err := c.resultsLastSeq(ctx, invocationID)
	if err != nil {
		return false, err
	}
	return last < seq, nil
}

// resultsLastSeq returns the results stream's last sequence as its leader
// reports it (its info; a direct get may be answered by a replica or a
// mirror behind it), asked for a look-up of invocationID. Its errors are
// LookupOnce's: one matching jetstream.ErrStreamNotFound when the stream
// is missing, the permission violation when the connection's last error
// says the info was refused, ErrLookupLost when it got no answer within
// LookupLimit while ctx still runs, ctx's error when ctx ends.
func (c *Client) resultsLastSeq(ctx context.Context, invocationID string) (uint64, error) {
	ictx, cancel := context.WithTimeout(ctx, LookupLimit)
	defer cancel()
	s, err := c.js.Stream(ictx, c.cfg.ResultsStream)
	switch {
	case err == nil:
		return s.CachedInfo().State.LastSeq, nil
	case ctx.Err() == nil && ictx.Err() != nil:
		if le := c.lookupRefused(invocationID); le != nil {
			return 0, fmt.Errorf("client: results stream %s: %w", c.cfg.ResultsStream, le)
		}
		return 0, ErrLookupLost
	}
	return 0, fmt.Errorf("client: results stream %s: %w", c.cfg.ResultsStream, err)
}

// awaitAfter is AwaitAfter of the result stored at afterSeq at afterTime
// (zero: not known; then the first result found at afterSeq, unless a
// look-up found none before, is taken for it).
func (c *Client) awaitAfter(ctx context.Context, invocationID string, afterSeq uint64, afterTime time.Time) (*envelope.Result, error) {
	// gone: a look-up in this call found no result, so the earlier one is
	// gone (found in review of this session's fix, twenty-fifth session:
	// the first result found at afterSeq was taken for it all the same).
	gone := false
	look := func() (*StoredResult, error) {
		stored, err := c.LookupOnce(ctx, invocationID)
		switch {
		case errors.Is(err, ErrNoResult):
			gone = true
			return nil, err
		case err != nil:
			return nil, err
		case afterTime.IsZero() && !gone && stored.Seq == afterSeq:
			afterTime = stored.Time // the earlier result
			return nil, nil
		}
		newer, err := c.storedAfter(ctx, invocationID, stored, afterSeq, afterTime, gone)
		if !newer {
			stored = nil
		}
		return stored, err
	}
	if !envelope.ValidID(invocationID) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidInvocationID, invocationID)
	}
	subject := envelope.ResultSubject(c.cfg.ResultPrefix, invocationID)
	// Subscribe first, and make sure the server has the subscription before
	// looking at the stream: a result published after that is delivered to
	// the subscription.
	sub, err := c.nc.SubscribeSync(subject)
	if err != nil {
		return nil, fmt.Errorf("client: await %s: subscribe: %w", invocationID, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := c.flush(ctx); err != nil {
		return nil, fmt.Errorf("client: await %s: %w", invocationID, err)
	}
	// A look-up (with the results stream's info it asks for a result at a
	// lower sequence, storedAfter) lost in a server restart, or one
	// JetStream does not answer yet after it (no responders), is no
	// answer: wait on the subscription, which works, and look again later.
	// Any other error (a missing results stream, a bad result, a refused
	// permission) ends Await. Until a look-up is answered (it finds a
	// result or none), lastErr is the last one's failure: when ctx ends
	// before one is, that is the cause, not a result that did not come in
	// time (a server without JetStream; found in review, twenty-third
	// session). A look-up that ctx itself cut short is not recorded: its
	// error only repeats ctx's (found in review of this session's fix,
	// twenty-third session). When ctx ends inside the first look-up (a
	// deadline shorter than LookupLimit), none was answered either: the
	// error matches ErrUnanswered too, not ctx's alone (found in review,
	// twenty-fifth session).
	var lastErr error
	answered := false
	stored, err := look()
	switch {
	case stored != nil:
		return stored.Result, nil
	case err == nil || errors.Is(err, ErrNoResult):
		answered = true
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return nil, unansweredError(ctx, invocationID, nil)
	case !lookupUnanswered(err):
		return nil, err
	default:
		lastErr = err
	}
	if c.waitingHook != nil {
		c.waitingHook(invocationID)
	}
	// A result published just before the subscription was in place is not
	// delivered to it, and the stream stores a message after the server has
	// handed it to the subscribers of its subject (asynchronously; in a
	// cluster only after the replicas agree), so the look-up above can miss
	// it too. Look again now and then while waiting: soon at first (that is
	// when such a result shows up in the stream), then rarely.
	delay := relookupFirst
	for {
		wctx, cancel := context.WithTimeout(ctx, delay)
		msg, err := sub.NextMsgWithContext(wctx)
		cancel()
		live := err == nil
		switch {
		case live && afterSeq == 0:
			return decode(invocationID, msg.Data)
		case live:
			// The older result again (dropped by the stream), or a
			// newer one the stream may not have stored yet: look now,
			// and soon again.
		case ctx.Err() != nil && !answered:
			return nil, unansweredError(ctx, invocationID, lastErr)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("client: await %s: %w", invocationID, ctx.Err())
		case !errors.Is(err, context.DeadlineExceeded):
			return nil, fmt.Errorf("client: await %s: %w", invocationID, err)
		}
		stored, err := look()
		switch {
		case stored != nil:
			return stored.Result, nil
		case errors.Is(err, ErrBadResult) || errors.Is(err, jetstream.ErrStreamNotFound) ||
			errors.Is(err, nats.ErrPermissionViolation):
			return nil, err
		case err == nil || errors.Is(err, ErrNoResult):
			answered = true
		case ctx.Err() == nil:
			lastErr = err
		}
		// No newer result stored yet, or the look-up failed (the live
		// subscription still works; the next look-up tries again).
		delay = min(2*delay, relookupMax)
		if live {
			delay = relookupFirst
		}
	}
}

// Intervals of Await's repeated look-ups while it waits: relookupFirst,
// doubling up to relookupMax.
const (
	relookupFirst = 50 * time.Millisecond
	relookupMax   = 5 * time.Second
)

// flushTimeout bounds one flush when ctx has no deadline (nats.go needs
// one).
const flushTimeout = 10 * time.Second

// flush waits for the server to process everything sent so far. A flush
// cut short by a dropped connection is tried again while the connection
// reconnects: nats.go ends a flush whose PONG is pending when the
// connection drops with nats.ErrConnectionClosed, although the connection
// is only reconnecting. A flush made while it reconnects waits for the
// reconnect: its PING is sent after it, behind the subscriptions nats.go
// sends again, so its PONG means the server has them. One that outlasts
// flushTimeout while the connection is still reconnecting is tried again
// too. flush gives up when ctx ends (its error matches ctx.Err()) or the
// connection is closed for good.
func (c *Client) flush(ctx context.Context) error {
	for {
		err := c.flushOnce(ctx)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case c.nc.IsClosed():
			return err
		case errors.Is(err, nats.ErrConnectionClosed) || c.nc.IsReconnecting():
			// Dropped, not closed: flush again (it waits for the
			// reconnect).
		default:
			return err
		}
	}
}

// flushOnce is one flush, within flushTimeout when ctx has no deadline.
func (c *Client) flushOnce(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, flushTimeout)
		defer cancel()
	}
	return c.nc.FlushWithContext(ctx)
}

func decode(invocationID string, data []byte) (*envelope.Result, error) {
	res, err := envelope.DecodeResult(data)
	if err != nil {
		return nil, fmt.Errorf("client: result of %s: %w: %w", invocationID, ErrBadResult, err)
	}
	return res, nil
}

// LookupLimit bounds one LookupOnce (each look-up Await makes while it
// waits, and SubmitAndAwait's before it sends): a request lost in a server
// restart is never answered (nats.go does not resend it), and waiting for
// it would keep Await from its subscription, where the result arrives
// after the reconnect.
const LookupLimit = 2 * time.Second

// ErrLookupLost is LookupOnce's error when its look-up got no answer
// within LookupLimit while the caller's context still runs (lost in a
// server restart, say): nothing is known of what is stored, and looking
// again is the remedy. A look-up the connection's permissions refuse is
// never answered either, but is not this error (see LookupOnce).
var ErrLookupLost = errors.New("client: result look-up got no answer")

// ErrUnanswered is matched, with ctx's error, by the error of an Await
// (AwaitAfter, AwaitSent) whose ctx ended before any of its result
// look-ups was answered: JetStream did not answer (no responders: a server
// without JetStream, or one whose JetStream is not back after a restart) or
// the look-ups' replies were lost. The error names the last look-up's
// failure.
var ErrUnanswered = errors.New("client: no result look-up was answered")

// unansweredError is the error of an Await of invocationID whose ctx
// ended before any of its look-ups was answered: it matches ctx.Err() and
// ErrUnanswered, and names last, the last look-up's failure (nil when
// each was cut short by ctx: their errors only repeat ctx's).
func unansweredError(ctx context.Context, invocationID string, last error) error {
	if last == nil {
		return fmt.Errorf("client: await %s: %w: %w (ended during a look-up)", invocationID, ctx.Err(), ErrUnanswered)
	}
	return fmt.Errorf("client: await %s: %w: %w; the last: %w", invocationID, ctx.Err(), ErrUnanswered, last)
}

// lookupUnanswered reports whether a look-up's error (LookupOnce's) means
// the server gave no answer yet, not that it answered with an error: the
// request was lost in a restart (ErrLookupLost), or JetStream does not
// answer yet after one (nats.ErrNoResponders: the server takes connections
// before its streams are up).
func lookupUnanswered(err error) bool {
	return errors.Is(err, ErrLookupLost) || errors.Is(err, nats.ErrNoResponders)
}

// checkResultsStream tells why a read of the results stream through s got
// no responders (err): AGENT_RESULTS allows direct gets, which nobody
// answers when the stream is gone, or when JetStream does not answer yet
// after a restart. It asks the stream's info (bounded by LookupLimit): when
// the stream is not found, the cached handle s is dropped and that is the
// error (found in review, twenty-third session: Await took a deleted
// stream for JetStream not being back and waited out its context);
// otherwise err (the stream found, its fresh handle replaces s).
func (c *Client) checkResultsStream(ctx context.Context, s jetstream.Stream, err error) error {
	ictx, cancel := context.WithTimeout(ctx, LookupLimit)
	defer cancel()
	fresh, ierr := c.js.Stream(ictx, c.cfg.ResultsStream)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case errors.Is(ierr, jetstream.ErrStreamNotFound):
		if c.results == s {
			c.results = nil
		}
		return fmt.Errorf("client: results stream %s: %w", c.cfg.ResultsStream, ierr)
	case ierr == nil && c.results == s:
		c.results = fresh
	}
	return err
}

// LookupOnce is Lookup bounded by LookupLimit: what Await and
// SubmitAndAwait do each time they look a result up, for callers that make
// their own look-ups with the same rules (the producer CLI's before a
// send). A look-up that got no answer in time is ErrLookupLost (look
// again), unless the connection's last error says the server refused one
// of its requests for want of a permission (a request the server refuses
// is never answered): then that error, which matches
// nats.ErrPermissionViolation and names the subject refused, and no look-up
// will ever be answered until the permissions change (found in review,
// twenty-third session: a producer allowed direct gets on the results
// stream but not by subject waited out its context for a stored result).
// When ctx itself ends first, its error is Lookup's.
func (c *Client) LookupOnce(ctx context.Context, invocationID string) (*StoredResult, error) {
	lctx, cancel := context.WithTimeout(ctx, LookupLimit)
	defer cancel()
	stored, err := c.Lookup(lctx, invocationID)
	if err != nil && ctx.Err() == nil && lctx.Err() != nil {
		if le := c.lookupRefused(invocationID); le != nil {
			return nil, fmt.Errorf("client: result of %s: %w", invocationID, le)
		}
		return nil, ErrLookupLost
	}
	return stored, err
}

// lookupRefused returns the connection's last error when it is a
// permission violation on a request Lookup of invocationID makes (the
// results stream's info, its direct get by subject, or its message get),
// else nil. The subjects are matched without their API prefix ($JS.API by
// default, another with a JetStream domain).
func (c *Client) lookupRefused(invocationID string) error {
	le := c.nc.LastError()
	if !errors.Is(le, nats.ErrPermissionViolation) {
		return nil
	}
	r := c.cfg.ResultsStream
	for _, suffix := range []string{
		".STREAM.INFO." + r,
		".DIRECT.GET." + r + "." + envelope.ResultSubject(c.cfg.ResultPrefix, invocationID),
		".STREAM.MSG.GET." + r,
	} {
		if strings.Contains(le.Error(), suffix+`"`) {
			return le
		}
	}
	return nil
}
