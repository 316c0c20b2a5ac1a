package replayer

// Exit codes of dlq-replayer. Usage errors have a code of their own (3) so
// that a script can tell "you called it wrong" from "a safety rule stopped
// the replay" (2).
const (
	// ExitOK: done.
	ExitOK = 0
	// ExitError: an error (NATS or Redis unreachable, a stream missing, a
	// publish failed, an invocation not found).
	ExitError = 1
	// ExitHalted: halted or refused by a safety rule: a class that needs a
	// person, a confirmation that was not given, a canary that failed
	// again, the auto-halt threshold, idempotency records that may expire
	// before the dead letters (Fleet.CheckRetention).
	ExitHalted = 2
	// ExitUsage: bad command line.
	ExitUsage = 3
	// ExitInterrupted: stopped by a signal.
	ExitInterrupted = 130
)
