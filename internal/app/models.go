package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/cooldown"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/providers/gemini"
	"github.com/agentfleet/agentfleet/pkg/providers/openai"
	"github.com/agentfleet/agentfleet/pkg/providers/sim"
	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// ErrBadConfig is matched (errors.Is) by a start-up failure that the
// configuration or the environment causes (an unknown model spec, a
// missing API key, bad simulated faults): the worker exits 2 for it, as
// for a configuration that does not validate, not 1.
var ErrBadConfig = errors.New("bad configuration")

// Provider builds the provider model named by cfg.Spec. API keys come from
// the environment through getenv and are never logged. A spec, key or
// fault setting that cannot work is an error matching ErrBadConfig.
func Provider(ctx context.Context, cfg config.Model, getenv func(string) string, log zerolog.Logger) (model.Model, error) {
	spec := cfg.Spec
	switch {
	case spec == "sim":
		faults, err := sim.ParseFaults(cfg.Sim.Faults)
		if err != nil {
			return nil, fmt.Errorf("%w: model.sim.faults: %w", ErrBadConfig, err)
		}
		// Seed 0 (model.sim.seed unset) draws one of this model's own:
		// logged, so a run's faults can be drawn again by setting it.
		m, err := sim.New(sim.Config{Name: "support", Seed: cfg.Sim.Seed, Latency: cfg.Sim.Latency, Faults: faults})
		if err != nil {
			return nil, err
		}
		log.Warn().Str("model", "sim").Str("faults", faults.String()).Uint64("seed", m.Config().Seed).
			Msg("SIMULATED model provider: for demos, load and chaos runs only")
		return m, nil
	case strings.HasPrefix(spec, "gemini:"):
		key := getenv("GEMINI_API_KEY")
		if key == "" {
			key = getenv("GOOGLE_API_KEY")
		}
		if key == "" {
			return nil, fmt.Errorf("%w: model gemini: set GEMINI_API_KEY or GOOGLE_API_KEY", ErrBadConfig)
		}
		m, err := gemini.New(ctx, gemini.Config{APIKey: key, Model: strings.TrimPrefix(spec, "gemini:"), BaseURL: cfg.GeminiBaseURL})
		if err != nil {
			// Its configuration (a base URL that does not parse): the URL
			// may carry a password, so the error goes out redacted.
			return nil, fmt.Errorf("%w: model gemini: %w", ErrBadConfig, config.RedactConnectError(err, cfg.GeminiBaseURL))
		}
		return m, nil
	case strings.HasPrefix(spec, "openai:"):
		key := getenv("OPENAI_API_KEY")
		if key == "" && cfg.OpenAIBaseURL == "" {
			return nil, fmt.Errorf("%w: model openai: set OPENAI_API_KEY (or openai_base_url for a local server)", ErrBadConfig)
		}
		m, err := openai.New(openai.Config{APIKey: key, Model: strings.TrimPrefix(spec, "openai:"), BaseURL: cfg.OpenAIBaseURL})
		if err != nil {
			return nil, fmt.Errorf("%w: model openai: %w", ErrBadConfig, config.RedactConnectError(err, cfg.OpenAIBaseURL))
		}
		return m, nil
	}
	return nil, fmt.Errorf("%w: model.spec %q: want sim, gemini:<model> or openai:<model>", ErrBadConfig, spec)
}

// IsTransient reports the classes the fleet cooldown counts as a model's
// failures: those the retry decorator may retry (provider and network
// trouble), never the caller's own mistakes.
func IsTransient(err error) bool {
	return taxonomy.PolicyFor(taxonomy.ClassifyError(err)).Retryable
}

// ModelChain wraps a provider: the fleet cooldown records every provider
// attempt and short-circuits while open, and the retry decorator (the only
// retry layer) sits outside it.
func ModelChain(provider model.Model, cfg config.Model, cool cooldown.Store, coolCfg cooldown.Config, m *taxonomy.Metrics, cm *cooldown.Metrics) (model.Model, error) {
	guarded := cooldown.Wrap(provider, cool, coolCfg, IsTransient).WithMetrics(cm)
	return retry.New(guarded, RetryConfig(cfg), retry.WithMetrics(m))
}

// RetryConfig is the retry decorator's configuration of cfg.
func RetryConfig(cfg config.Model) retry.Config {
	acc := retry.PerCall
	if cfg.Retry.CountEachAttempt {
		acc = retry.PerAttempt
	}
	return retry.Config{
		MaxAttempts: cfg.Retry.Attempts, InitialInterval: cfg.Retry.Initial, MaxInterval: cfg.Retry.Max,
		MaxHint: cfg.Retry.HintCap, Accounting: acc,
		BudgetMaxTokens: cfg.Retry.BudgetMaxTokens, BudgetTokenRatio: cfg.Retry.BudgetTokenRatio,
		DisableBudget: cfg.Retry.BudgetDisabled, AttemptTimeout: cfg.Retry.AttemptTimeout,
	}
}

// CheckDerived validates what the worker builds from cfg beyond cfg's own
// Validate (the streams' configuration, the retry decorator's, the refund
// tool's idempotency options, on which idempotency.Wrap would panic), before
// anything connects: such a mistake is a configuration error (exit 2), not
// a failure after the embedded server started or NATS was reached.
func CheckDerived(cfg config.Worker) error {
	if err := StreamsConfig(cfg).WithDefaults().Validate(); err != nil {
		return fmt.Errorf("%w: streams: %w", ErrBadConfig, err)
	}
	if err := RetryConfig(cfg.Model).WithDefaults().Validate(); err != nil {
		return fmt.Errorf("%w: model.retry: %w", ErrBadConfig, err)
	}
	if err := refundIdempotencyOptions(cfg, nil, zerolog.Nop()).WithDefaults().Validate(); err != nil {
		return fmt.Errorf("%w: idempotency: %w", ErrBadConfig, err)
	}
	return nil
}
