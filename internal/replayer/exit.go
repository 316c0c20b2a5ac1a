package replayer

// Exit codes of dlq-replayer. Usage and configuration errors have a code of
// their own (3) so that a script can tell "you called it wrong" from "a
// safety rule stopped the replay" (2).
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
	// ExitUsage: bad command line or configuration: flags or arguments, a
	// configuration file that does not validate, and stores that are not
	// the fleet's (ErrOtherStores: show, replay and drain refuse them).
	ExitUsage = 3
	// ExitInterrupted: stopped by a signal.
	ExitInterrupted = 130
)
