package retry

import "sync"

// Budget is a per-model retry budget with gRPC retry-throttling semantics:
// it holds tokens, starting full at maxTokens; every failed attempt of a
// retryable class costs one token, every successful attempt adds
// tokenRatio (capped at maxTokens); a retry is allowed only while the
// tokens are above maxTokens/2. During a full outage the tokens drain to
// the threshold after a handful of calls and from then on every call makes
// a single attempt, so retries cannot multiply the load on a struggling
// provider. It is safe for concurrent use.
type Budget struct {
	mu        sync.Mutex
	tokens    float64
	maxTokens float64
	ratio     float64
}

// NewBudget returns a full budget of maxTokens that refills by tokenRatio
// per success.
func NewBudget(maxTokens, tokenRatio float64) *Budget {
	return &Budget{tokens: maxTokens, maxTokens: maxTokens, ratio: tokenRatio}
}

// AllowRetry reports whether a retry may start now (tokens above half the
// capacity). A nil Budget always allows.
func (b *Budget) AllowRetry() bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens > b.maxTokens/2
}

// OnFailure charges one token for a failed attempt of a retryable class.
func (b *Budget) OnFailure() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens--
	if b.tokens < 0 {
		b.tokens = 0
	}
}

// OnSuccess adds tokenRatio for a successful attempt.
func (b *Budget) OnSuccess() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens += b.ratio
	if b.tokens > b.maxTokens {
		b.tokens = b.maxTokens
	}
}

// Tokens returns the current token count.
func (b *Budget) Tokens() float64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens
}

// Budgets is a registry of budgets keyed by model name and settings, so
// that every decorator of the same model with the same budget settings in
// a process shares one budget.
type Budgets struct {
	mu sync.Mutex
	m  map[budgetKey]*Budget
}

// budgetKey identifies a shared budget.
type budgetKey struct {
	model                 string
	maxTokens, tokenRatio float64
}

// DefaultBudgets is the process-wide registry New uses when no budget is
// given with WithBudget.
var DefaultBudgets = &Budgets{}

// For returns the budget of modelName with maxTokens and tokenRatio,
// creating it if it does not exist yet. Decorators of one model configured
// with other settings get a budget of their own with their settings: the
// first creator's settings used to win, so a second agent configured for a
// larger (or a smaller) budget silently got the first one's (found in
// review, seventeenth session).
func (r *Budgets) For(modelName string, maxTokens, tokenRatio float64) *Budget {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[budgetKey]*Budget{}
	}
	k := budgetKey{modelName, maxTokens, tokenRatio}
	b, ok := r.m[k]
	if !ok {
		b = NewBudget(maxTokens, tokenRatio)
		r.m[k] = b
	}
	return b
}
