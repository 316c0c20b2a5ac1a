package agenttest

import (
	"iter"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// Collect drains an event sequence and returns its events and the error
// that ended it.
func Collect(seq iter.Seq2[*session.Event, error]) ([]*session.Event, error) {
	var out []*session.Event
	for e, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

// FinalText returns the text of the last final response in events, or "".
func FinalText(events []*session.Event) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].IsFinalResponse() && len(events[i].FunctionResponses()) == 0 {
			return events[i].Content.Text()
		}
	}
	return ""
}

// FunctionResponses returns every function response in events, in order.
func FunctionResponses(events []*session.Event) []*model.FunctionResponse {
	var out []*model.FunctionResponse
	for _, e := range events {
		out = append(out, e.FunctionResponses()...)
	}
	return out
}

// ResponseFor returns the first function response for tool name, failing t
// if there is none.
func ResponseFor(t testing.TB, events []*session.Event, name string) map[string]any {
	t.Helper()
	for _, fr := range FunctionResponses(events) {
		if fr.Name == name {
			return fr.Response
		}
	}
	t.Fatalf("no function response for %q in %d events", name, len(events))
	return nil
}

// Stored returns the non-partial events of seq's output.
func Stored(events []*session.Event) []*session.Event {
	var out []*session.Event
	for _, e := range events {
		if !e.Partial {
			out = append(out, e)
		}
	}
	return out
}

// RequireEventIDs fails t unless the session holds exactly the given events
// (matched by ID) in order.
func RequireEventIDs(t testing.TB, sess *session.Session, want []*session.Event) {
	t.Helper()
	if len(sess.Events) != len(want) {
		t.Fatalf("session has %d events, want %d", len(sess.Events), len(want))
	}
	for i := range want {
		if sess.Events[i].ID != want[i].ID {
			t.Fatalf("session event %d is %q, want %q", i, sess.Events[i].ID, want[i].ID)
		}
	}
}
