// Package worker is the JetStream consumer that runs agent invocations: it
// fetches requests from the durable "workers" consumer (only as many as it
// has free slots, so no message waits unheartbeated in a buffer), keeps each
// one alive with InProgress() while its invocation runs, and ends every
// message in exactly one of completed, dead-lettered or failed-reported,
// following the outcome → action table of DESIGN.md. Nothing is dropped:
// what cannot run now is put back (Nak / NakWithDelay; a request whose
// session stays busy is requeued to the end of the stream, so that it does
// not hold the consumer's MaxAckPending slots), what can never run is
// dead-lettered with a reason.
package worker
