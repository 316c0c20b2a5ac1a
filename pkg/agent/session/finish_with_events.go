package session

import (
	"context"
	"fmt"
)

// EventGate is a Gate that can also store a session's last events in
// Finish's step (one round trip on Redis instead of two), for the events an
// invocation left to its caller (agent.RunRequest.DeferFinalWrite).
type EventGate interface {
	Gate
	// FinishWithEvents appends evs (possibly none) to key's session in
	// sessions, as AppendEvents, and does Finish, in one atomic step when
	// sessions is a store it can write in that step (the one the gate was
	// built for; otherwise as Finish or AppendThenFinish, which are not
	// fenced by the lock). The atomic step writes only while owner holds
	// key's lock (else nothing, released true, and an error wrapping
	// ErrNotOwner, or the *InvocationCompletedError when the record is
	// completed) and stores no events for an invocation whose record is
	// completed already (the *InvocationCompletedError, as Finish). Events
	// that could not be encoded give a *FinishAppendError and nothing is
	// written; a write the store refused inside the step is returned as
	// the store's error, and nothing is written either. After a transport
	// error the outcome is unknown (released false): the caller must not
	// write the events again itself, but let the redelivery decide from
	// what is stored.
	FinishWithEvents(ctx context.Context, rec *Invocation, key Key, owner string, sessions Service, evs []*Event) (released bool, err error)
}

// FinishAppendError reports that the events could not be encoded
// (EventGate.FinishWithEvents) or that AppendThenFinish's append failed: the
// record was not written and the lock not released. After a transport
// error in AppendThenFinish the events may have been stored all the same.
type FinishAppendError struct {
	Err error // Err is the append's error.
}

func (e *FinishAppendError) Error() string { return fmt.Sprintf("session: finish: append: %v", e.Err) }

// Unwrap returns the append's error.
func (e *FinishAppendError) Unwrap() error { return e.Err }

// FinishWithEvents stores evs in key's session and then finishes the
// invocation with g: through g's FinishWithEvents when it is an EventGate
// (one step, also with no events), else AppendEvents then g.Finish (with no
// events, g.Finish).
func FinishWithEvents(ctx context.Context, g Gate, sessions Service, rec *Invocation, key Key, owner string, evs []*Event) (released bool, err error) {
	if eg, ok := g.(EventGate); ok {
		return eg.FinishWithEvents(ctx, rec, key, owner, sessions, evs)
	}
	if len(evs) == 0 {
		return g.Finish(ctx, rec, key, owner)
	}
	return AppendThenFinish(ctx, g, sessions, rec, key, owner, evs)
}

// AppendThenFinish is FinishWithEvents in two steps: AppendEvents, then
// g.Finish if the append succeeded. An EventGate that cannot write sessions
// in its own step uses it. It does not check the lock before the append
// (no more than any append does) nor the record: over a completed record
// the events are stored and Finish reports the *InvocationCompletedError.
func AppendThenFinish(ctx context.Context, g Gate, sessions Service, rec *Invocation, key Key, owner string, evs []*Event) (released bool, err error) {
	if err := AppendEvents(ctx, sessions, key, evs); err != nil {
		return false, &FinishAppendError{Err: err}
	}
	return g.Finish(ctx, rec, key, owner)
}
