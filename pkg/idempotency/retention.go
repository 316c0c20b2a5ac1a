package idempotency

import (
	"fmt"
	"time"
)

// DefaultDLQMaxAge is the AGENT_DLQ stream's default max age (DESIGN.md).
const DefaultDLQMaxAge = 14 * 24 * time.Hour

// RetentionSlack is how much longer than the DLQ's max age a completed
// record must be kept. A record's retention starts when the tool completes,
// a DLQ entry's age when it is published, which is later (the rest of the
// invocation, redeliveries), and a replay of an entry just before it expires
// still has to run. One day covers both with room to spare.
const RetentionSlack = 24 * time.Hour

// DefaultRetention is how long completed records are kept unless
// Options.Retention says otherwise: DefaultDLQMaxAge + RetentionSlack
// (15 days), the smallest value that passes ValidateRetention with the
// default DLQ.
const DefaultRetention = DefaultDLQMaxAge + RetentionSlack

// ValidateRetention reports a retention that does not outlive the dead-letter
// stream: retention must be >= dlqMaxAge + RetentionSlack. Equal to the DLQ
// max age is not enough: an entry replayed just before it expires would find
// the records of effects made before it was dead-lettered already gone, and
// the effects would run again. A dlqMaxAge <= 0 (the DLQ keeps entries
// forever) is an error: no finite retention outlives it. Call it at start-up
// with the configured DLQ max age.
func ValidateRetention(retention, dlqMaxAge time.Duration) error {
	if retention <= 0 {
		return fmt.Errorf("idempotency: retention %s must be > 0", retention)
	}
	if dlqMaxAge <= 0 {
		return fmt.Errorf("idempotency: the dead-letter stream has no max age, so no retention (%s) outlives it: set the DLQ max age", retention)
	}
	if need := dlqMaxAge + RetentionSlack; retention < need {
		return fmt.Errorf("idempotency: retention %s of completed tool results must be at least the dead-letter max age %s + %s slack = %s, "+
			"or a replay from the DLQ would run effects again", retention, dlqMaxAge, RetentionSlack, need)
	}
	return nil
}
