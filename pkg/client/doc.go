// Package client is the producer side of the fleet: it submits request
// envelopes to agent.requests.<agent> (the invocation id doubles as
// Nats-Msg-Id, so a resubmission within the duplicate window is dropped by
// the server) and awaits results on agent.results.<invocation_id>.
//
// Awaiting works before and after completion: Await first subscribes to the
// result subject with a plain core-NATS subscription, then reads the last
// stored message of that subject from AGENT_RESULTS, and only then waits on
// the subscription. The server hands a published result to the subject's
// subscribers before the stream has stored it, so a result published just
// before the subscription was in place can be neither delivered to it nor
// found by that look-up: while waiting, Await looks up the stored result
// again, after 50ms and then at doubling intervals up to 5s. So a result
// published at any moment is seen. This needs nothing newer than NATS server
// 2.9 (no ordered consumers). A connection that drops and reconnects while
// Await waits (a server restart) does not end it.
//
// A resubmission of a finished invocation runs nothing (the worker answers
// it from its record), so its result is the stored one (StoredResult.Final:
// SubmitAndAwait returns it without sending the request again), except
// after a BAD_INPUT refusal, which the worker made before it recorded anything:
// SubmitAndAwait, and AwaitSent after a Lookup and a Send, return the
// result that follows such a refusal; a resubmission the requests stream
// drops as a duplicate gets the refusal when it duplicates the refused
// request itself, and the result of the resend it duplicates otherwise
// (AwaitSent says how it tells them apart).
//
// Send's errors say whether the request may be stored: a *PublishError when
// the publish got no PubAck (send it again with the same id), a
// *RefusedError when the stream refused it in its PubAck (not stored).
package client
