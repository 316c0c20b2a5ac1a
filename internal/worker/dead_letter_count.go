package worker

import (
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// maxCountedTracked bounds Worker.counted: past it the worker forgets the
// entries it counted (a duplicate of one of them is then counted again).
const maxCountedTracked = 10000

// countedEntries remembers the DLQ entries a worker counted, by their
// stream sequence in the DLQ, with their class.
type countedEntries struct {
	mu sync.Mutex
	m  map[uint64]taxonomy.Class
}

// note remembers the entry at seq, of class, and reports whether this
// worker had not counted it yet.
func (c *countedEntries) note(seq uint64, class taxonomy.Class) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[seq]; ok {
		return false
	}
	if c.m == nil || len(c.m) >= maxCountedTracked {
		c.m = map[uint64]taxonomy.Class{}
	}
	c.m[seq] = class
	return true
}

// class returns the class of the entry at seq this worker counted ("" when
// it counted none there).
func (c *countedEntries) class(seq uint64) taxonomy.Class {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[seq]
}

// countEntry counts the DLQ entry ack names, of class (the class the DLQ
// holds there), for agent: DeadLetters, and Pages or LoopSuspects by its
// class (Metrics.deadLettered). Every counter is counted once per stored
// entry, when the DLQ stores it, under the class it stores: a redelivery
// whose publish of the same entry is a duplicate counts nothing. Counted
// after the invocation record instead, a record write whose reply was lost
// (the redelivery acks a duplicate) never counted the entry, and a kept
// entry of another class was counted under the record's class (found in
// review of the twenty-fourth session's fix).
//
// A duplicate PubAck cannot tell whether the delivery that stored the entry
// counted it: it did when only its record write or its Term failed, not
// when its PubAck was lost on the way back (the entry stored, the message
// put back). So a duplicate is counted unless this worker counted the
// entry itself: a lost PubAck is counted by the redelivery, and a
// redelivery on another worker after a lost Term or a failed record write
// counts the entry a second time. The alerts on these counters fire on any
// increase (AgentfleetBadInput, AgentfleetLoopSuspected) or on a rate of
// 20 in 30 minutes (AgentfleetDLQGrowing): a rare second count is better
// than an entry that never makes them fire.
func (w *Worker) countEntry(ack *jetstream.PubAck, class taxonomy.Class, agent string) {
	if !w.counted.note(ack.Sequence, class) && ack.Duplicate {
		return
	}
	w.deps.Metrics.deadLettered(class, w.agentLabel(agent))
}
