package model

import "errors"

// ErrNotSent is matched (errors.Is) by the error of a call that a decorator
// refused before it reached the provider, such as a fleet-wide cooldown's
// refusal. Such a call is not a provider attempt and not a model failure: a
// retry decorator does not count it as an attempt, and the taxonomy does
// not record it as a failure of its own. The work waits and runs again
// later (the worker puts the message back until the cooldown ends).
var ErrNotSent = errors.New("model: call not sent to the provider")
