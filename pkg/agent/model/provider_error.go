package model

import (
	"fmt"
	"time"
)

// ProviderError is a provider-neutral failure of one model call, for
// adapters that have no SDK error type of their own (the simulated provider,
// plain HTTP adapters). Adapters built on an SDK return the SDK's error
// (wrapped with %w) and the classifier reads that type directly.
type ProviderError struct {
	// Provider names the adapter ("sim", "gemini", ...).
	Provider string
	// StatusCode is the HTTP status, or 0 when the failure was not an HTTP
	// response.
	StatusCode int
	// Status is the canonical status string (e.g. "RESOURCE_EXHAUSTED").
	Status string
	// Code is the provider's machine-readable error code, if any (e.g.
	// "insufficient_quota").
	Code string
	// Message is the provider's raw message, kept for logs and review.
	Message string
	// RetryAfter is the server's retry hint; 0 when it sent none.
	RetryAfter time.Duration
	// QuotaExhausted is set when the provider said a quota is spent, which
	// waiting a few seconds does not fix.
	QuotaExhausted bool
	// RequestID is the provider's request id, if any.
	RequestID string
	// InStream is set when the failure came as an error event inside a
	// stream whose HTTP response was 200 OK; StatusCode is then the status
	// the same failure gets before a stream (what classifiers read), and
	// the error text says so rather than claim the response had it.
	InStream bool
	// Err is the underlying error, if any.
	Err error
}

// Error implements error.
func (e *ProviderError) Error() string {
	if e == nil {
		return "<nil *model.ProviderError>"
	}
	s := fmt.Sprintf("%s: model call failed", e.Provider)
	switch {
	case e.InStream && e.StatusCode != 0:
		s += fmt.Sprintf(": stream error event (classed as HTTP %d)", e.StatusCode)
	case e.InStream:
		s += ": stream error event"
	case e.StatusCode != 0:
		s += fmt.Sprintf(": HTTP %d", e.StatusCode)
	}
	if e.Status != "" {
		s += " " + e.Status
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns the underlying error.
func (e *ProviderError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// HTTPStatusCode returns the HTTP status (0 if none). Classifiers match the
// interface{ HTTPStatusCode() int } so other error types can opt in.
func (e *ProviderError) HTTPStatusCode() int {
	if e == nil {
		return 0
	}
	return e.StatusCode
}
