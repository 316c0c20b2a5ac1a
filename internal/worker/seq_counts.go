package worker

import "sync"

// maxSeqCountsTracked bounds a seqCounts: past it the counts start over
// (a message then needs its bound's count again).
const maxSeqCountsTracked = 10000

// seqCounts counts, per message (by request stream sequence), how often
// this worker saw something happen to it: the panics it had on it
// (afterPanic), the times it put it back for want of its agent
// (unknownAgent).
type seqCounts struct {
	mu sync.Mutex
	m  map[uint64]int
}

// note counts one for the message at seq and returns its count.
func (c *seqCounts) note(seq uint64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxSeqCountsTracked {
		c.m = map[uint64]int{}
	}
	c.m[seq]++
	return c.m[seq]
}

// count returns the count of the message at seq.
func (c *seqCounts) count(seq uint64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[seq]
}

// forget drops the count of the message at seq.
func (c *seqCounts) forget(seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, seq)
}
