package replayer

import (
	"errors"
	"fmt"
)

// ForcedExitNote is what the line of a second ^C (shutdown.NotifyWith) says
// exiting at once leaves behind, in the replayer's terms: it was the
// worker's "what was in hand is redelivered", which says nothing true of a
// replay (left open in the twenty-third session). A replay counts as done
// on its PubAck, and its entry is deleted after that (in batches,
// remover), so an entry not yet deleted stays in its stream, replayed or
// not, and a rerun finds it: the requests' duplicate window, and after it
// the worker's invocation record, keep it from running twice. A park copies
// before it deletes, and parking again after a crash between the two
// stores no second copy within the parked stream's duplicate window
// (itemParkedMsgID); after it, a second copy of an entry that runs once.
const ForcedExitNote = "replays already published stay published; entries not yet removed stay in the DLQ or parked stream, " +
	"some of them replayed or parked already: run the same command again, it does not run them twice"

// interruptedError is the error of a command that ctx (^C, SIGTERM) ended:
// it says what the command changed and what it left, where ctx's error
// alone said "context canceled" (left open in the twenty-third session).
// It wraps ctx's error, and the exit code stays ExitInterrupted.
type interruptedError struct {
	msg   string
	left  int // entries of the plan not handled
	cause error
}

// Error implements error.
func (e *interruptedError) Error() string { return e.msg }

// Unwrap returns the error the interruption ended the command with.
func (e *interruptedError) Unwrap() error { return e.cause }

// executeInterrupted is Execute's error when ctx ended it after it had
// handled handled of the planned entries, which are in stream.
func executeInterrupted(planned, handled int, stream string, cause error) error {
	left := planned - handled
	if left <= 0 {
		return &interruptedError{cause: cause, msg: fmt.Sprintf(
			"interrupted after all %d entries were handled (the summary counts them; NO RESULT counts the replays whose result was not awaited)", planned)}
	}
	return &interruptedError{left: left, cause: cause, msg: fmt.Sprintf(
		"interrupted: %d of %d entries handled (the summary counts them); the other %d stay in %s as they were. "+
			"Run the same command again to go on: an entry in hand at the interrupt may have been replayed or parked already; "+
			"the rerun runs nothing twice (the worker's invocation record stops a second run)", handled, planned, left, stream)}
}

// interrupted is err of a command that ctx ended, said as an interruption:
// a command that changed something said what (an *interruptedError
// already); any other error of an interrupted command came before it
// changed anything. Errors with an exit code of their own (a halt, a usage
// error) are returned as they are.
func interrupted(err error) error {
	var ie *interruptedError
	if err == nil || errors.As(err, &ie) || exitCode(true, err) != ExitInterrupted {
		return err
	}
	return &interruptedError{msg: "interrupted; nothing was changed", cause: err}
}
