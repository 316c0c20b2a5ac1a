package idempotency

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Wait backoff between claims while another live owner holds the key.
const (
	waitInitialInterval = 20 * time.Millisecond
	waitMaxInterval     = time.Second
)

// releaseTimeout bounds clean-up store calls made after the caller's context
// may have ended.
const releaseTimeout = 5 * time.Second

// Wrap returns t guarded by store: see the package documentation for the
// flow. Wrap only tools with side effects; read-only tools (lookups,
// searches) must not be wrapped: they gain nothing and would replay stale
// reads. Wrap applies opts.WithDefaults and panics if Validate fails (a
// configuration bug to catch at start-up); use NewTool to get the error.
func Wrap(t tool.Tool, store Store, opts Options) tool.Tool {
	w, err := NewTool(t, store, opts)
	if err != nil {
		panic(err)
	}
	return w
}

// NewTool is Wrap returning an error instead of panicking.
func NewTool(t tool.Tool, store Store, opts Options) (tool.Tool, error) {
	if t == nil || store == nil {
		return nil, errors.New("idempotency: NewTool needs a tool and a store")
	}
	opts = opts.WithDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := ValidateSegment(t.Name()); err != nil {
		return nil, fmt.Errorf("idempotency: tool name: %w", err)
	}
	return &wrapped{inner: t, store: store, opts: opts}, nil
}

// wrapped is the Tool Wrap returns.
type wrapped struct {
	inner tool.Tool
	store Store
	opts  Options
}

// Name implements tool.Tool.
func (w *wrapped) Name() string { return w.inner.Name() }

// Description implements tool.Tool.
func (w *wrapped) Description() string { return w.inner.Description() }

// Declaration implements tool.Tool.
func (w *wrapped) Declaration() *model.ToolDeclaration { return w.inner.Declaration() }

// Unwrap returns the wrapped tool.
func (w *wrapped) Unwrap() tool.Tool { return w.inner }

// call is one wrapped Run.
type call struct {
	w      *wrapped
	agent  string
	tool   string
	ticket Ticket
	// tc is the call's tool context: what the tool asks of the loop
	// (state changes, the end of the invocation) is stored with its
	// result and given back to a replay.
	tc *tool.Context
}

// logAt starts a log line at level with the call's invocation_id,
// session_id and agent (added per line: nothing is built for lines a level
// turns off).
func (c *call) logAt(level zerolog.Level) *zerolog.Event {
	return c.w.opts.Logger.WithLevel(level).Str("invocation_id", c.ticket.InvocationID).
		Str("session_id", c.tc.Session.SessionID).Str("agent", c.agent)
}

// Run implements tool.Tool: claim, then run and complete (or release), or
// replay the stored result, or wait for another owner.
func (w *wrapped) Run(ctx context.Context, args map[string]any) (map[string]any, error) {
	tc := tool.FromContext(ctx)
	if tc == nil || tc.InvocationID == "" {
		return nil, ErrNoInvocationID
	}
	agent := w.opts.Agent
	if agent == "" {
		agent = tc.Session.App
	}
	name := w.inner.Name()
	key, argsHash, err := deriveKeyAndArgsHash(KeyInput{Prefix: w.opts.KeyPrefix, Agent: agent, InvocationID: tc.InvocationID, Tool: name, Args: args, KeyFields: w.opts.KeyFields})
	if err != nil {
		return nil, err
	}
	owner, err := newOwnerToken(w.opts.Owner)
	if err != nil {
		return nil, err
	}
	c := &call{w: w, agent: agent, tool: name, tc: tc, ticket: Ticket{Key: key.String(), InvocationID: tc.InvocationID, Owner: owner}}
	claim, err := c.claim(ctx, ClaimRequest{Ticket: c.ticket, Agent: agent, Tool: name, ArgsHash: argsHash, Lease: w.opts.Lease})
	if err != nil {
		return nil, err
	}
	if claim.Outcome == OutcomeCompleted {
		return c.replay(claim.Record, argsHash)
	}
	return c.run(ctx, args, claim.Record.LeaseUntil)
}

// claim claims the key, waiting with backoff while another live owner holds
// it, at most WaitTimeout.
func (c *call) claim(ctx context.Context, req ClaimRequest) (Claim, error) {
	o := c.w.opts
	start := time.Now()
	var b *backoff.ExponentialBackOff // made at the first wait: most claims have none
	sawInProgress := false
	var last Claim // the last in-progress answer, while waiting
	for {
		sctx, cancel := context.WithTimeout(ctx, o.StoreTimeout)
		cl, err := c.w.store.Claim(sctx, req)
		cancel()
		if err != nil && sawInProgress && ctx.Err() != nil {
			// The caller's context ended the wait during a poll: the key
			// is still another owner's as far as anyone knows, and the
			// store did nothing wrong.
			c.w.opts.Metrics.inProgressConflict(c.agent, c.tool)
			return Claim{}, &InProgressError{Key: req.Key, Owner: last.Record.Owner, LeaseUntil: last.Record.LeaseUntil, Waited: time.Since(start), Err: ctx.Err()}
		}
		if err != nil {
			c.w.opts.Metrics.claim(c.agent, c.tool, "error")
			c.w.opts.Metrics.storeError(c.agent, c.tool, "claim")
			var se *StoreError
			if errors.Is(err, ErrKeyTooLong) {
				// The store cannot hold the key (the configured prefix, agent
				// or tool name is too long for it): no outage, so not a
				// StoreError, which the worker Naks for ever. The error
				// escalates: the invocation is dead-lettered with it, and
				// nothing ran.
				return Claim{}, err
			}
			if !errors.As(err, &se) {
				// Fail closed whatever the store said.
				err = &StoreError{Backend: "unknown", Op: "claim", Err: err}
			}
			return Claim{}, err
		}
		if cl.Outcome == OutcomeInProgress && cl.Record.Owner == req.Owner {
			// This call's own claim (its token is drawn per call): a client
			// that resent the claim after losing its reply (Redis with
			// retries on) finds the first send's record. Found in review,
			// twenty-fifth session: the wrapper waited on itself. A record
			// of more than one owner means that first send took over an
			// expired lease: reclaimed, as its own answer would have said
			// (found in review of that fix).
			cl.Outcome = OutcomeAcquired
			if cl.Record.Attempts > 1 {
				cl.Outcome = OutcomeReclaimed
			}
		}
		if cl.Outcome != OutcomeInProgress || !sawInProgress {
			// Count each call's first in-progress answer once, not every poll.
			c.w.opts.Metrics.claim(c.agent, c.tool, cl.Outcome)
		}
		if cl.Outcome != OutcomeInProgress {
			return cl, nil
		}
		sawInProgress, last = true, cl
		waited := time.Since(start)
		remaining := o.WaitTimeout - waited
		if remaining <= 0 {
			c.w.opts.Metrics.inProgressConflict(c.agent, c.tool)
			return Claim{}, &InProgressError{Key: req.Key, Owner: cl.Record.Owner, LeaseUntil: cl.Record.LeaseUntil, Waited: waited}
		}
		if b == nil {
			b = backoff.NewExponentialBackOff(
				backoff.WithInitialInterval(waitInitialInterval),
				backoff.WithMaxInterval(waitMaxInterval),
				backoff.WithMaxElapsedTime(0),
			)
		}
		d := min(b.NextBackOff(), remaining)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			c.w.opts.Metrics.inProgressConflict(c.agent, c.tool)
			return Claim{}, &InProgressError{Key: req.Key, Owner: cl.Record.Owner, LeaseUntil: cl.Record.LeaseUntil, Waited: time.Since(start), Err: ctx.Err()}
		case <-t.C:
		}
	}
}

// replay answers from a completed record.
func (c *call) replay(rec Record, argsHash string) (map[string]any, error) {
	if rec.ArgsHash != "" && rec.ArgsHash != argsHash {
		// Key fields matched, other arguments differ: by design the stored
		// result wins (a rephrased reason must not refund twice). Recorded.
		c.w.opts.Metrics.argsMismatch(c.agent, c.tool)
		c.logAt(zerolog.WarnLevel).Str("key", c.ticket.Key).
			Str("stored_args_hash", rec.ArgsHash).Str("args_hash", argsHash).
			Msg("idempotency: replaying a stored result for arguments that differ outside the key fields")
	}
	res, err := decodeResult(rec.Result)
	if err != nil {
		return nil, fmt.Errorf("idempotency: stored result of %s: %w", c.ticket.Key, err)
	}
	if err := c.replayActions(res); err != nil {
		return nil, fmt.Errorf("idempotency: stored result of %s: %w", c.ticket.Key, err)
	}
	c.w.opts.Metrics.replay(c.agent, c.tool)
	return res, nil
}

// actionsKey is the member of a stored result that holds what the tool
// asked of the loop (session.Actions), when it asked anything: a replay
// gives the loop the same state changes and the same end of the
// invocation as the run it replays. It is never part of a result a caller
// sees, unless the tool's own result has a member of that name: that one is
// stored inside the wrapper's member (storedActions.ToolMember) and given
// back as it was.
const actionsKey = "_agentfleet_actions"

// storedActions is what actionsKey holds: the tool's actions and, when the
// tool's own result had a member named actionsKey, that member's value.
// Records written before ToolMember existed decode the same.
type storedActions struct {
	StateDelta    map[string]any  `json:"state_delta,omitempty"`
	EndInvocation bool            `json:"end_invocation,omitempty"`
	ToolMember    json.RawMessage `json:"tool_member,omitempty"`
}

// withActions returns the result to store: res, with the tool's actions
// under actionsKey when it recorded any, or when res itself has a member
// of that name (a tool passing a downstream service's JSON through): a
// replay would otherwise read the tool's member as actions (found in
// review, eighteenth session).
func (c *call) withActions(res map[string]any, raw []byte) ([]byte, error) {
	acts := c.tc.Actions()
	own, clash := res[actionsKey]
	if !acts.EndInvocation && len(acts.StateDelta) == 0 && !clash {
		return raw, nil
	}
	sa := storedActions{StateDelta: acts.StateDelta, EndInvocation: acts.EndInvocation}
	if clash {
		b, err := json.Marshal(own)
		if err != nil {
			return nil, err
		}
		sa.ToolMember = b
	}
	m := make(map[string]any, len(res)+1)
	for k, v := range res {
		m[k] = v
	}
	m[actionsKey] = sa
	return json.Marshal(m)
}

// replayActions takes the stored actions out of res and records them on
// the call's tool context, as the tool did when it ran; a member of the
// tool's own that shared the name goes back into res.
func (c *call) replayActions(res map[string]any) error {
	v, ok := res[actionsKey]
	if !ok {
		return nil
	}
	delete(res, actionsKey)
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var sa storedActions
	if err := session.DecodeJSON(raw, &sa); err != nil {
		return fmt.Errorf("decode actions: %w", err)
	}
	if len(sa.ToolMember) > 0 {
		var own any
		if err := session.DecodeJSON(sa.ToolMember, &own); err != nil {
			return fmt.Errorf("decode actions: the tool's own %s member: %w", actionsKey, err)
		}
		res[actionsKey] = own
	}
	for k, v := range sa.StateDelta {
		c.tc.SetState(k, v)
	}
	if sa.EndInvocation {
		c.tc.EndInvocation()
	}
	return nil
}

// run runs the tool under the claim, renewing the lease, then completes or
// releases.
func (c *call) run(ctx context.Context, args map[string]any, leaseUntil time.Time) (res map[string]any, err error) {
	runCtx, cancel := context.WithCancelCause(WithKey(ctx, c.ticket.Key))
	defer cancel(nil)
	r := startRenewer(ctx, c, leaseUntil, cancel)
	defer func() {
		if p := recover(); p != nil {
			// The tool may have done its effect before it panicked: the
			// outcome is unknown, and a retry must not run it again.
			r.stop()
			c.complete(outcomeUnknown, r.until())
			panic(p)
		}
	}()
	res, err = c.w.inner.Run(runCtx, args)
	r.stop()
	leaseUntil = r.until() // the claim is this caller's until then
	switch {
	case err != nil && (errors.Is(err, ErrNotApplied) || errors.Is(err, tool.ErrInvalidArguments)):
		c.release("error")
		return nil, err
	case err != nil:
		// The tool ran and failed: it may have done its effect first (a
		// refund sent, its reply lost). Store that the outcome is unknown,
		// so a retry answers from the record instead of running it again.
		c.complete(outcomeUnknown, leaseUntil)
		// Marked, so the model (and the degraded answer) hear what a
		// retry will: the outcome is unknown. A timeout used to read as
		// "timed out, try once more" on the first call only, and the
		// degraded answer told the user a timed-out refund was not done
		// (found in review, eighteenth session).
		return nil, tool.OutcomeUnknown(err)
	case tool.IsRetryable(res):
		c.release("retryable")
		return res, nil
	}
	raw, encErr := json.Marshal(res)
	if encErr != nil {
		// The effect happened; never run it again. Record that the result
		// could not be stored (with the tool's actions) and report the
		// encoding error.
		c.complete(c.notRecordedRecords()[0], leaseUntil)
		return nil, fmt.Errorf("idempotency: tool %s: encode result: %w", c.tool, encErr)
	}
	stored, encErr := c.withActions(res, raw)
	if encErr != nil {
		c.complete(c.notRecordedRecords()[0], leaseUntil)
		return nil, fmt.Errorf("idempotency: tool %s: encode actions: %w", c.tool, encErr)
	}
	c.complete(stored, leaseUntil)
	// Every caller, first or replayed, sees the same JSON-shaped result
	// (but for a result too large for the store: the first caller gets it,
	// a replay gets the result_not_recorded map, see complete). Both get
	// the same actions.
	if m, ok := normalizedResult(res); ok {
		return m, nil
	}
	return decodeResult(raw)
}

// notRecordedResult is the result stored for a call whose tool succeeded
// but whose result cannot be stored: it does not encode as JSON, or the
// store cannot hold it (ErrResultTooLarge). The effect happened, so a
// replay answers this instead of running the tool again.
func notRecordedResult() map[string]any {
	return tool.Error("result_not_recorded", false, "the tool ran but its result could not be recorded")
}

// resultNotRecorded is notRecordedResult as JSON, without the tool's
// actions: the last resort of notRecordedRecords.
var resultNotRecorded = func() json.RawMessage {
	raw, _ := json.Marshal(notRecordedResult())
	return raw
}()

// notRecordedRecords returns what to store, first choice first, for a call
// whose tool succeeded but whose result cannot be stored: the
// result_not_recorded map with the tool's actions under actionsKey, as
// withActions stores them (a replay gives the loop the same state changes
// and the same end of the invocation as the run it replays; they used to be
// dropped with the result, found in review, nineteenth session); then with
// only the end of the invocation, for state changes that do not encode or
// are themselves too large for the store; then the bare map. A member of
// the tool's own named actionsKey is part of the result, not recorded.
func (c *call) notRecordedRecords() []json.RawMessage {
	acts := c.tc.Actions()
	var out []json.RawMessage
	add := func(sa storedActions) {
		m := notRecordedResult()
		m[actionsKey] = sa
		if raw, err := json.Marshal(m); err == nil {
			out = append(out, raw)
		}
	}
	if len(acts.StateDelta) > 0 {
		add(storedActions{StateDelta: acts.StateDelta, EndInvocation: acts.EndInvocation})
	}
	if acts.EndInvocation {
		add(storedActions{EndInvocation: true})
	}
	return append(out, resultNotRecorded)
}

// smallerRecord returns what to store in place of raw, which the store
// refused as too large: the record after raw in notRecordedRecords, or
// the first of them when raw is not one; nil when raw is the last.
func (c *call) smallerRecord(raw json.RawMessage) json.RawMessage {
	recs := c.notRecordedRecords()
	for i, r := range recs {
		if bytes.Equal(r, raw) {
			if i+1 < len(recs) {
				return recs[i+1]
			}
			return nil
		}
	}
	return recs[0]
}

// outcomeUnknown is stored for a call whose tool returned an error that
// does not say the effect was not applied, or panicked (ErrNotApplied).
var outcomeUnknown = func() json.RawMessage {
	raw, _ := json.Marshal(tool.Error(tool.ReasonOutcomeUnknown, false,
		"The tool failed after it may have acted; do not call it again. Tell the user it is being checked."))
	return raw
}()

// complete stores the result, retrying an unreachable store (with backoff)
// until the claim's lease ends (leaseUntil, the end of the last lease the
// store granted this caller), and at least for max(WaitTimeout,
// StoreTimeout). Until the lease ends no other owner can take the key, so a
// store back by then still records the result; giving up earlier (after
// max(WaitTimeout, StoreTimeout), 10 s of a 30 s lease by default) left the
// key in progress, and the first call after the lease ran the effect again
// (found in review, twenty-third session). The tool has run: failures are
// logged and counted, not returned. A result the store can never hold
// (ErrResultTooLarge) is replaced by the result_not_recorded map with the
// tool's actions (notRecordedRecords).
func (c *call) complete(raw json.RawMessage, leaseUntil time.Time) {
	o := c.w.opts
	deadline := time.Now().Add(max(o.WaitTimeout, o.StoreTimeout))
	if leaseUntil.After(deadline) {
		deadline = leaseUntil
	}
	b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(waitInitialInterval), backoff.WithMaxInterval(waitMaxInterval), backoff.WithMaxElapsedTime(0))
	for {
		ctx, cancel := context.WithTimeout(context.Background(), o.StoreTimeout)
		err := c.w.store.Complete(ctx, c.ticket, raw, o.Retention)
		cancel()
		if err == nil {
			return
		}
		if IsOwnershipError(err) {
			o.Metrics.leaseLost(c.agent, c.tool)
			c.logAt(zerolog.ErrorLevel).Err(err).Str("key", c.ticket.Key).
				Msg("idempotency: claim lost before the result was stored; the tool may have run twice (lease too short?)")
			return
		}
		o.Metrics.storeError(c.agent, c.tool, "complete")
		if errors.Is(err, ErrResultTooLarge) {
			if smaller := c.smallerRecord(raw); smaller != nil {
				// No retry can store it, and a claim left in progress
				// would be taken over when its lease ends and the
				// effect run again: complete the key with a smaller
				// record instead.
				c.logAt(zerolog.ErrorLevel).Err(err).Str("key", c.ticket.Key).
					Int("result_bytes", len(raw)).Int("record_bytes", len(smaller)).
					Msg("idempotency: the tool ran but its result is too large for the store; recording result_not_recorded instead")
				raw = smaller
				continue
			}
		}
		d := b.NextBackOff()
		if !errors.Is(err, ErrStoreUnavailable) || time.Now().Add(d).After(deadline) {
			c.logAt(zerolog.ErrorLevel).Err(err).Str("key", c.ticket.Key).Time("lease_until", leaseUntil).
				Msg("idempotency: the tool ran but its result could not be stored; the claim stays in progress until its lease ends, and a call after that runs the tool again")
			return
		}
		time.Sleep(d)
	}
}

// release gives the claim up so the call may run again.
func (c *call) release(reason string) {
	o := c.w.opts
	ctx, cancel := context.WithTimeout(context.Background(), min(o.StoreTimeout, releaseTimeout))
	defer cancel()
	err := c.w.store.Release(ctx, c.ticket)
	switch {
	case err == nil:
		o.Metrics.release(c.agent, c.tool, reason)
	case IsOwnershipError(err):
		o.Metrics.leaseLost(c.agent, c.tool)
		c.logAt(zerolog.WarnLevel).Err(err).Str("key", c.ticket.Key).Msg("idempotency: release after the claim was lost")
	default:
		o.Metrics.storeError(c.agent, c.tool, "release")
		c.logAt(zerolog.WarnLevel).Err(err).Str("key", c.ticket.Key).Msg("idempotency: release failed; the claim ends with its lease")
	}
}

// decodeResult decodes a result as stored (session.DecodeJSON): numbers
// are json.Numbers, so a replay gives the model the digits the first run
// gave it (an id above 2^53 came back rounded through float64).
func decodeResult(raw json.RawMessage) (map[string]any, error) {
	var m map[string]any
	if err := session.DecodeJSON(raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// newOwnerToken returns "<worker>/<128 random bits in hex>".
func newOwnerToken(worker string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("idempotency: owner token: %w", err)
	}
	return worker + "/" + hex.EncodeToString(b[:]), nil
}
