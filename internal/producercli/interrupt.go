package producercli

// ForcedExitNote is what the line of a second ^C (shutdown.NotifyWith) says
// exiting at once leaves behind, in the producer's terms: it was the
// worker's "what was in hand is redelivered", and the producer holds no
// message that JetStream redelivers (found in review, twenty-fourth
// session). A request it published stays published and runs; one it had
// not sent is not sent; a batch file run again looks each line up first,
// so it skips what completed and awaits what is still running (a resend
// inside the requests' duplicate window is dropped, after it the worker
// answers from the invocation's record). A send without --invocation
// made its id up, which a rerun would not reuse: the note points at
// `await` with the id it printed (found in review of this session's fix).
const ForcedExitNote = "requests already published stay queued and run; the rest were not sent; " +
	"run a batch again: it skips what completed and awaits what still runs; " +
	"for a send, await the invocation id it printed rather than sending again"
