package session

import "context"

// BatchAppender is implemented by a Service that can store several events
// in one write (one round trip on Redis).
type BatchAppender interface {
	// AppendEvents stores evs in order, as AppendEvent would one after
	// another, atomically where the backend can: all or none. It stamps
	// them (Stamp) and returns only after the store acknowledged the
	// write.
	AppendEvents(ctx context.Context, key Key, evs []*Event) error
}

// AppendEvents stores evs in order with s's AppendEvents when it is a
// BatchAppender, else with AppendEvent one by one (then a failure can leave
// the first events stored).
func AppendEvents(ctx context.Context, s Service, key Key, evs []*Event) error {
	if b, ok := s.(BatchAppender); ok && len(evs) > 1 {
		return b.AppendEvents(ctx, key, evs)
	}
	for _, ev := range evs {
		if err := s.AppendEvent(ctx, key, ev); err != nil {
			return err
		}
	}
	return nil
}
