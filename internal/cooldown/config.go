package cooldown

import (
	"errors"
	"time"
)

// Config tunes the breaker. Zero fields take the defaults in WithDefaults.
type Config struct {
	// Window is the sliding window over which failures are counted
	// (default 30s). It is split into Buckets buckets.
	Window time.Duration `yaml:"window"`
	// Buckets is the number of window buckets (default 10).
	Buckets int `yaml:"buckets"`
	// Threshold is the share of transient failures (0..1] that opens the
	// cooldown (default 0.5).
	Threshold float64 `yaml:"threshold"`
	// MinCalls is the number of attempts in the window below which the
	// breaker never opens (default 20), so two failures out of three do not
	// stop a fleet.
	MinCalls int `yaml:"min_calls"`
	// Duration is how long a cooldown stays open (default 30s).
	Duration time.Duration `yaml:"duration"`
	// CheckInterval is how long a worker caches the "is it open?" answer
	// before asking the store again (default 1s).
	CheckInterval time.Duration `yaml:"check_interval"`
	// Disabled turns the breaker off.
	Disabled bool `yaml:"disabled"`
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Window == 0 {
		c.Window = 30 * time.Second
	}
	if c.Buckets == 0 {
		c.Buckets = 10
	}
	if c.Threshold == 0 {
		c.Threshold = 0.5
	}
	if c.MinCalls == 0 {
		c.MinCalls = 20
	}
	if c.Duration == 0 {
		c.Duration = 30 * time.Second
	}
	if c.CheckInterval == 0 {
		c.CheckInterval = time.Second
	}
	return c
}

// Validate reports impossible settings.
func (c Config) Validate() error {
	var errs []error
	if c.Window <= 0 || c.Buckets <= 0 || c.Window/time.Duration(c.Buckets) < time.Millisecond {
		errs = append(errs, errors.New("cooldown: window and buckets must give buckets of at least 1ms"))
	}
	if !(c.Threshold > 0 && c.Threshold <= 1) { // NaN too: it turned the breaker off
		errs = append(errs, errors.New("cooldown: threshold must be in (0, 1]"))
	}
	if c.MinCalls < 1 {
		errs = append(errs, errors.New("cooldown: min_calls must be at least 1"))
	}
	if c.Duration <= 0 {
		errs = append(errs, errors.New("cooldown: duration must be positive"))
	}
	return errors.Join(errs...)
}

func (c Config) bucketSize() time.Duration { return c.Window / time.Duration(c.Buckets) }
