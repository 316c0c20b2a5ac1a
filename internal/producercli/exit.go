package producercli

// Exit codes of the producer.
const (
	// ExitOK: done; every awaited result completed.
	ExitOK = 0
	// ExitError: an error other than the ones below (NATS unreachable, the
	// streams missing, a publish failed, the batch file unreadable).
	ExitError = 1
	// ExitUsage: bad command line (a misspelt AGENTFLEET_ variable too).
	ExitUsage = 2
	// ExitTimeout: no result within --timeout.
	ExitTimeout = 3
	// ExitNotCompleted: a result arrived but is failed or dead_lettered; in
	// a batch, any line that did not complete (invalid, failed,
	// dead-lettered, timed out, held behind an earlier line of its
	// session).
	ExitNotCompleted = 4
	// ExitInterrupted: stopped by a signal.
	ExitInterrupted = 130
)
