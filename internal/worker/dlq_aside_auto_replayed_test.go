package worker_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review of this session's fix, twenty-fourth session): publishEntry
// published a dead letter beside the entry holding its generation's id
// (dlq-seq:<seq>-<n>, as received) whenever that entry was of another class
// waiting for a person, and did not check that id for a duplicate itself.
// Three deliveries of one message failed AUTH, NOT_FOUND and RATE_LIMITED,
// the first two with a failed record write: AUTH held dlq-<id>-0, NOT_FOUND
// took dlq-seq:<seq>-0, and the third delivery's RATE_LIMITED dead letter
// was dropped as a duplicate of the NOT_FOUND entry. The record and the
// user said RATE_LIMITED "queued"; the DLQ held two entries waiting for a
// person and nothing replayed the work. A dead letter is published beside
// the stored entry only when its class is replayed automatically and the
// stored one's is not (of two classes waiting for a person the first is
// kept), and an automatically replayed entry holding the id beside is kept.

// failNInvocations fails the first n writes of a dead letter's record (a
// record store outage lasting n deliveries).
type failNInvocations struct {
	session.InvocationStore
	n      atomic.Int32
	failed atomic.Int32
}

func (s *failNInvocations) Transition(ctx context.Context, rec *session.Invocation) error {
	if rec.Status.Terminal() && rec.Status != session.InvocationCompleted && s.n.Add(-1) >= 0 {
		s.failed.Add(1)
		return errors.New("test: record store unavailable")
	}
	return s.InvocationStore.Transition(ctx, rec)
}

func TestAutoReplayedFailureStoredBesideEntriesForAPerson(t *testing.T) {
	auth := &model.ProviderError{Provider: "test", StatusCode: 401}
	notFound := &model.ProviderError{Provider: "test", StatusCode: 404}
	rateLimited := &model.ProviderError{Provider: "test", StatusCode: 429, Status: "RESOURCE_EXHAUSTED"}
	timeout := &model.ProviderError{Provider: "test", StatusCode: 504, Status: "DEADLINE_EXCEEDED"}
	for _, c := range []struct {
		name    string
		fails   []error
		last    string
		entries string // the DLQ's classes, sorted
	}{
		// The review's case: NOT_FOUND is not stored beside AUTH (both
		// wait for a person), so RATE_LIMITED takes the id beside.
		{"AUTH NOT_FOUND RATE_LIMITED", []error{auth, notFound, rateLimited}, "RATE_LIMITED", "AUTH RATE_LIMITED"},
		// The id beside holds RATE_LIMITED, replayed automatically: kept
		// for the TIMEOUT failure of the third delivery.
		{"AUTH RATE_LIMITED TIMEOUT", []error{auth, rateLimited, timeout}, "TIMEOUT", "AUTH RATE_LIMITED"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			invs := &failNInvocations{InvocationStore: e.invs}
			invs.n.Store(int32(len(c.fails) - 1))
			e.deps = func(d *worker.Deps) { d.Invocations = invs }
			var steps []agenttest.Step
			for _, err := range c.fails {
				steps = append(steps, agenttest.Fail(err))
			}
			e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(steps...)), worker.Config{MaxDeliveries: 5, InfraBackoffMax: time.Millisecond})
			id := "inv-aside-" + strings.ToLower(strings.ReplaceAll(c.name, " ", "-"))
			e.publish(request(id, "s1", "hi"), nil)
			res := e.await(id)
			eventually(t, "the message acked", func() bool { return e.pending() == 0 })
			if int(invs.failed.Load()) != len(c.fails)-1 || res.ErrorClass != c.last || res.UserMessage != worker.MsgQueued || res.Status != envelope.StatusDeadLettered {
				t.Fatalf("result %+v after %d failed record writes, want %s \"queued\" after %d", res, invs.failed.Load(), c.last, len(c.fails)-1)
			}
			var classes []string
			queued := false
			for _, en := range e.dlqEntries() {
				t.Logf("DLQ entry: %s retryable=%v replay=%d", en.Class, en.Retryable, en.ReplayCount)
				classes = append(classes, en.Class)
				queued = queued || en.Retryable
			}
			sort.Strings(classes)
			if !queued {
				t.Errorf("the user was told %q, the record says %s, but no entry in the DLQ is replayed automatically", res.UserMessage, res.ErrorClass)
			}
			if got := strings.Join(classes, " "); got != c.entries {
				t.Errorf("DLQ entries %q, want %q", got, c.entries)
			}
		})
	}
}
