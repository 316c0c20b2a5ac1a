package idempotency

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/rs/zerolog"
)

// Defaults and bounds for Options.
const (
	// DefaultLease is how long a claim holds without renewal.
	DefaultLease = 30 * time.Second
	// DefaultWaitTimeout is how long a call waits for another live owner.
	DefaultWaitTimeout = 10 * time.Second
	// MaxWaitTimeout bounds Options.WaitTimeout.
	MaxWaitTimeout = 5 * time.Minute
	// DefaultStoreTimeout bounds each store call.
	DefaultStoreTimeout = 5 * time.Second
)

// Options configure Wrap. Call WithDefaults before Validate; Wrap does both.
type Options struct {
	// Agent is the agent name in the key. Empty: the session's app name
	// from tool.FromContext(ctx).Session.App at call time.
	Agent string
	// KeyPrefix is the key's first segment; empty: DefaultKeyPrefix.
	KeyPrefix string
	// KeyFields, when set, are the only top-level arguments in the key (a
	// refund: "order_id", "amount_cents", not the free-text "reason"). A
	// call lacking one fails with a *KeyFieldError and does not run.
	// Numbers are canonicalised as RFC 8785 does (IEEE 754 doubles, as a
	// model's JSON arguments arrive anyway), so integers beyond 2^53 that
	// differ only in low digits share a key: declare such ids as strings.
	KeyFields []string
	// Lease is how long a claim holds without renewal; default DefaultLease.
	Lease time.Duration
	// RenewInterval is how often the lease is renewed while the tool runs;
	// default Lease/3. Must be shorter than the lease less the cancel
	// margin (a tenth of the lease, at most 2 s: a tool is cancelled that
	// long before an unrenewed lease ends), or no renewal could come
	// before the cancel. It counts from when the claim's answer arrives:
	// when a late answer leaves less of the lease than that before the
	// cancel, the first renewal is made at once.
	RenewInterval time.Duration
	// Retention is how long completed results are kept; default
	// DefaultRetention. Validate checks it against DLQMaxAge.
	Retention time.Duration
	// DLQMaxAge is the dead-letter stream's max age; default
	// DefaultDLQMaxAge. See ValidateRetention.
	DLQMaxAge time.Duration
	// WaitTimeout bounds the wait for another live owner before an
	// *InProgressError; 0: DefaultWaitTimeout, negative: do not wait. At
	// most MaxWaitTimeout.
	WaitTimeout time.Duration
	// StoreTimeout bounds each store call; default DefaultStoreTimeout.
	StoreTimeout time.Duration
	// Owner names this worker in owner tokens ("<Owner>/<random>") so
	// on-call can see who holds a claim; default "<hostname>:<pid>".
	Owner string
	// Metrics receives counters; nil records nothing.
	Metrics *Metrics
	// Logger logs lease losses, argument mismatches on replay and store
	// failures after the tool ran; the zero value logs nothing.
	Logger zerolog.Logger
}

// WithDefaults returns o with zero fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.KeyPrefix == "" {
		o.KeyPrefix = DefaultKeyPrefix
	}
	if o.Lease == 0 {
		o.Lease = DefaultLease
	}
	if o.RenewInterval == 0 {
		o.RenewInterval = o.Lease / 3
	}
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.DLQMaxAge == 0 {
		o.DLQMaxAge = DefaultDLQMaxAge
	}
	if o.WaitTimeout == 0 {
		o.WaitTimeout = DefaultWaitTimeout
	}
	if o.StoreTimeout == 0 {
		o.StoreTimeout = DefaultStoreTimeout
	}
	if o.Owner == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "worker"
		}
		o.Owner = host + ":" + strconv.Itoa(os.Getpid())
	}
	return o
}

// Validate reports options Wrap must refuse. Call it after WithDefaults.
func (o Options) Validate() error {
	var errs []error
	if o.Agent != "" {
		if err := ValidateSegment(o.Agent); err != nil {
			errs = append(errs, fmt.Errorf("agent: %w", err))
		}
	}
	if err := ValidateSegment(o.KeyPrefix); err != nil {
		errs = append(errs, fmt.Errorf("key prefix: %w", err))
	}
	for _, f := range o.KeyFields {
		if f == "" {
			errs = append(errs, errors.New("key fields: empty field name"))
		}
	}
	if o.Lease <= 0 {
		errs = append(errs, fmt.Errorf("lease %s must be > 0", o.Lease))
	}
	if limit := o.Lease - cancelMargin(o.Lease); o.RenewInterval <= 0 || o.RenewInterval >= limit {
		errs = append(errs, fmt.Errorf("renew interval %s must be > 0 and < %s (lease %s less the %s cancel margin): a longer one renews after the tool was cancelled", o.RenewInterval, limit, o.Lease, cancelMargin(o.Lease)))
	}
	if err := ValidateRetention(o.Retention, o.DLQMaxAge); err != nil {
		errs = append(errs, err)
	}
	if o.WaitTimeout > MaxWaitTimeout {
		errs = append(errs, fmt.Errorf("wait timeout %s exceeds %s", o.WaitTimeout, MaxWaitTimeout))
	}
	if o.StoreTimeout <= 0 {
		errs = append(errs, fmt.Errorf("store timeout %s must be > 0", o.StoreTimeout))
	}
	if o.Owner == "" {
		errs = append(errs, errors.New("owner must not be empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("idempotency: invalid options: %w", err)
	}
	return nil
}
