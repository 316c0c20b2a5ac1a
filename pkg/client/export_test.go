package client

// SetWaitingHook sets the hook Await calls when it starts waiting for a live
// result (tests only).
func SetWaitingHook(c *Client, f func(invocationID string)) { c.waitingHook = f }
