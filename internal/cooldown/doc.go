// Package cooldown is the fleet-wide, per-model circuit breaker (LiteLLM's
// per-process cooldown, shared through Redis): every worker records the
// outcome of each provider attempt; when the share of transient failures of a
// model crosses a threshold within a sliding window, the model is put in
// cooldown for a while and every worker stops calling it, instead of each
// hammering a provider that is already down. The dead-letter replayer reads
// the same state and pauses replays of that model.
package cooldown
