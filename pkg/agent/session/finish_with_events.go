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
	// FinishWithEvents appends evs to key's session in sessions, as
	// AppendEvents, and then does Finish, in one step when sessions is a
	// store it can write in that step (the one the gate was built for);
	// otherwise it calls FinishWithEvents of this package's fallback. When
	// the events could not be stored, nothing else is done: released is
	// false and err is the append's (a *FinishAppendError).
	FinishWithEvents(ctx context.Context, rec *Invocation, key Key, owner string, sessions Service, evs []*Event) (released bool, err error)
}

// FinishAppendError reports that FinishWithEvents could not store the
// events: the record was not written and the lock not released by it. The
// events may have been stored when the store's reply was lost.
type FinishAppendError struct {
	Err error // Err is the append's error.
}

func (e *FinishAppendError) Error() string { return fmt.Sprintf("session: finish: append: %v", e.Err) }

// Unwrap returns the append's error.
func (e *FinishAppendError) Unwrap() error { return e.Err }

// FinishWithEvents stores evs in key's session and then finishes the
// invocation with g: through g's FinishWithEvents when it is an EventGate
// (one step), else AppendEvents then g.Finish. With no events it is
// g.Finish.
func FinishWithEvents(ctx context.Context, g Gate, sessions Service, rec *Invocation, key Key, owner string, evs []*Event) (released bool, err error) {
	if len(evs) == 0 {
		return g.Finish(ctx, rec, key, owner)
	}
	if eg, ok := g.(EventGate); ok {
		return eg.FinishWithEvents(ctx, rec, key, owner, sessions, evs)
	}
	return AppendThenFinish(ctx, g, sessions, rec, key, owner, evs)
}

// AppendThenFinish is FinishWithEvents in two steps: AppendEvents, then
// g.Finish if the append succeeded. An EventGate that cannot write sessions
// in its own step uses it.
func AppendThenFinish(ctx context.Context, g Gate, sessions Service, rec *Invocation, key Key, owner string, evs []*Event) (released bool, err error) {
	if err := AppendEvents(ctx, sessions, key, evs); err != nil {
		return false, &FinishAppendError{Err: err}
	}
	return g.Finish(ctx, rec, key, owner)
}
