package client

import "errors"

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
