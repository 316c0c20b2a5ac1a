package client

import (
	"errors"
	"fmt"
)

// Errors returned by the Client. Failures of a request's validation are
// *envelope.InvalidError (errors.As); an Await that runs out of time returns
// an error matching ctx's error (context.DeadlineExceeded or
// context.Canceled).
var (
	// ErrNoResult is returned by Lookup when the invocation has no stored
	// result (not finished yet, never submitted, or older than the results'
	// max age).
	ErrNoResult = errors.New("client: no result")
	// ErrBadResult is matched by the error for a result message that cannot
	// be decoded.
	ErrBadResult = errors.New("client: undecodable result")
	// ErrInvalidInvocationID is returned for an invocation id that is not a
	// subject-safe id ([A-Za-z0-9_-]{1,128}).
	ErrInvalidInvocationID = errors.New("client: invalid invocation id")
	// ErrInvalidConfig is matched by the error New returns for a Config
	// that fails Validate.
	ErrInvalidConfig = errors.New("client: invalid config")
)

// PublishError is Send's error when the request's publish failed or got no
// PubAck: the requests stream may or may not hold the request (no stream
// answered, the connection broke, the PubAck did not come in time). A
// PubAck that carries the stream's refusal is a *RefusedError instead. Sending
// the same request again with the same invocation id is safe: the stream's
// duplicate window drops a second copy. Err is the publish's error
// (errors.Is sees through it, a context.DeadlineExceeded included).
type PublishError struct {
	// InvocationID is the request's invocation id.
	InvocationID string
	// Err is the publish's error.
	Err error
}

// Error implements error.
func (e *PublishError) Error() string {
	return fmt.Sprintf("client: submit %s: publish not confirmed (the request may or may not be stored; send it again with the same invocation id, which the stream deduplicates): %v", e.InvocationID, e.Err)
}

// Unwrap returns the publish's error.
func (e *PublishError) Unwrap() error { return e.Err }

// RefusedError is Send's error when the requests stream answered the
// publish with a refusal: a JetStream API error in the PubAck (10060, the
// stream serving the subject is not Config.RequestsStream; a limit of the
// stream or of the account; a message larger than the stream takes). The
// request is not stored. Sending it again as it is fails the same way until
// what refused it changes (the configuration, the stream's limits, space
// freed). Err is the server's error: errors.As finds its
// *jetstream.APIError (its ErrorCode tells the refusal).
type RefusedError struct {
	// InvocationID is the request's invocation id.
	InvocationID string
	// Err is the server's refusal (a *jetstream.APIError, wrapped).
	Err error
}

// Error implements error.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("client: submit %s: refused by the requests stream (not stored): %v", e.InvocationID, e.Err)
}

// Unwrap returns the server's refusal.
func (e *RefusedError) Unwrap() error { return e.Err }
