package client

// SetWaitingHook sets the hook Await calls when it starts waiting for a live
// result (tests only).
func SetWaitingHook(c *Client, f func(invocationID string)) { c.waitingHook = f }

// DuplicateSlack is how long past its duplicate window AwaitSent still takes
// a refused request's id to be in it.
const DuplicateSlack = duplicateSlack
