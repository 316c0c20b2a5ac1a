package idempotency

import "context"

type keyCtxKey struct{}

// WithKey returns ctx carrying key. The wrapper calls it before running the
// tool; tests may call it to run a tool directly.
func WithKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyCtxKey{}, key)
}

// KeyFromContext returns the idempotency key of the running wrapped tool
// call, for the tool to pass downstream (e.g. as an Idempotency-Key header).
func KeyFromContext(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(keyCtxKey{}).(string)
	return k, ok && k != ""
}
