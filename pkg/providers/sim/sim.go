// Package sim is a SIMULATED model provider. It talks to no language model:
// a fixed script drives the order-support agent, with configurable latency
// and per-class fault injection from a seeded random source.
//
// It exists for demos, load tests and chaos runs only. It must never stand
// in for a real adapter (pkg/providers/gemini, pkg/providers/openai) in a
// claim about provider behaviour: its errors and finish reasons imitate the
// shapes the real adapters produce, nothing more. Every model it builds is
// named "sim:<name>" so that configs, logs and metrics show it is simulated.
//
// The script, from the conversation in the request (so it is stateless and
// replays identically on resume):
//
//  1. a fresh user turn: call get_order(order_id), the id parsed from the
//     user's text (pattern like A-1042; Config.DefaultOrderID if absent);
//  2. after the get_order response: call refund_order(order_id,
//     amount_cents, reason), the amount taken from the result's
//     amount_cents or total_cents (also under a nested "order" object);
//  3. after the refund_order response: the final text
//     "Refunded 1299 cents for order A-1042."
//
// A tool response that is an error map is retried once when it says
// retryable (the same call again; a second retryable error is final), and
// otherwise answered with a final text that says the step failed and why.
//
// Faults (see FaultClass) are drawn once per call: thrown faults come back
// as a *model.ProviderError{Provider: "sim"} that also wraps ErrSimulated;
// in-band faults as a response with the matching finish reason.
//
// Given a seed (Config.Seed, not 0), the sequence of faults and latencies
// is deterministic for single-threaded use; without one, every model draws
// a seed of its own (NewSeed), reported by Config to rerun with. The
// model is safe for concurrent use (the random source is locked), but then
// the interleaving decides who gets which draw.
package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// ProviderName is the provider label of every simulated model and error.
const ProviderName = "sim"

// Tool names the script calls.
const (
	ToolGetOrder    = "get_order"
	ToolRefundOrder = "refund_order"
)

// Config configures a simulated model.
type Config struct {
	// Name labels the model; Name() returns "sim:" + Name. Default
	// "order-support".
	Name string
	// Seed seeds the random source for faults and latency jitter: the same
	// seed gives the same sequence. 0 (the default) is no seed: New draws
	// one of the model's own (NewSeed), so two models never share their
	// faults by accident; Config reports the seed drawn.
	Seed uint64
	// Latency is slept (honouring ctx) before every call answers.
	Latency time.Duration
	// Jitter adds a uniform random [0, Jitter) to Latency.
	Jitter time.Duration
	// Faults are the per-class fault probabilities (see ParseFaults).
	Faults Faults
	// RetryAfter is the hint a rate_limited fault carries. Default 2s.
	RetryAfter time.Duration
	// DefaultOrderID is used when the user's text names no order. Default
	// "A-1000".
	DefaultOrderID string
	// RefundReason is the reason argument of refund_order. Default
	// "customer request".
	RefundReason string
}

// WithDefaults returns a copy of c with empty optional fields set.
func (c Config) WithDefaults() Config {
	if c.Name == "" {
		c.Name = "order-support"
	}
	if c.RetryAfter == 0 {
		c.RetryAfter = 2 * time.Second
	}
	if c.DefaultOrderID == "" {
		c.DefaultOrderID = "A-1000"
	}
	if c.RefundReason == "" {
		c.RefundReason = "customer request"
	}
	return c
}

// Validate reports the first problem with c.
func (c Config) Validate() error {
	if strings.ContainsAny(c.Name, " \t\r\n") {
		return fmt.Errorf("sim: config: Name %q contains whitespace", c.Name)
	}
	if c.Latency < 0 || c.Jitter < 0 || c.RetryAfter < 0 {
		return errors.New("sim: config: Latency, Jitter and RetryAfter must not be negative")
	}
	return c.Faults.Validate()
}

// Stats counts what a simulated model did, for tests and demos.
type Stats struct {
	// Calls is the number of GenerateContent calls that started.
	Calls int64
	// StreamCalls is how many of them streamed.
	StreamCalls int64
	// Faults counts injected faults by class.
	Faults map[FaultClass]int64
	// FunctionCalls counts responses that asked for a tool.
	FunctionCalls int64
	// FinalAnswers counts healthy final text responses.
	FinalAnswers int64
}

// Model is the simulated model. It implements model.Model.
type Model struct {
	cfg  Config
	name string // Name's answer, built once: it is asked several times a call

	mu  sync.Mutex
	rng *rand.Rand

	calls, streamCalls, functionCalls, finals atomic.Int64
	faults                                    [8]atomic.Int64
}

var _ model.Model = (*Model)(nil)

// New builds a simulated model from cfg (defaults applied, then validated).
func New(cfg Config) (*Model, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	faults := make(Faults, len(cfg.Faults))
	for k, v := range cfg.Faults {
		faults[k] = v
	}
	cfg.Faults = faults
	if cfg.Seed == 0 {
		cfg.Seed = NewSeed()
	}
	return &Model{cfg: cfg, name: ProviderName + ":" + cfg.Name, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}, nil
}

// Name returns "sim:<Config.Name>", so a simulated model is never mistaken
// for a real one in logs and metrics.
func (m *Model) Name() string { return m.name }

// Simulated reports true: the model is simulated. Wiring code may log it.
func (m *Model) Simulated() bool { return true }

// Config returns the model's effective configuration, its Seed the one
// drawn when New was given none. Its Faults is a copy: writing to it does
// not change the model.
func (m *Model) Config() Config {
	c := m.cfg
	c.Faults = maps.Clone(m.cfg.Faults)
	return c
}

// Stats returns a snapshot of the counters.
func (m *Model) Stats() Stats {
	s := Stats{
		Calls:         m.calls.Load(),
		StreamCalls:   m.streamCalls.Load(),
		FunctionCalls: m.functionCalls.Load(),
		FinalAnswers:  m.finals.Load(),
		Faults:        map[FaultClass]int64{},
	}
	for i, c := range FaultClasses {
		if n := m.faults[i].Load(); n > 0 {
			s.Faults[c] = n
		}
	}
	return s
}

// draw is one call's random values, taken together under the lock so every
// call consumes the same amount of the random stream.
type draw struct {
	fault     FaultClass // "" for none
	jitter    time.Duration
	resetConn bool // transport: connection reset instead of unexpected EOF
}

func (m *Model) draw() draw {
	m.mu.Lock()
	u := m.rng.Float64()
	j := m.rng.Int64N(int64(max(m.cfg.Jitter, 1)))
	reset := m.rng.IntN(2) == 1
	m.mu.Unlock()
	d := draw{resetConn: reset}
	if m.cfg.Jitter > 0 {
		d.jitter = time.Duration(j)
	}
	cum := 0.0
	for _, c := range FaultClasses {
		p := m.cfg.Faults[c]
		if p <= 0 {
			continue
		}
		cum += p
		if u < cum {
			d.fault = c
			break
		}
	}
	return d
}

// GenerateContent answers one call from the script, after the configured
// latency, possibly replaced by an injected fault.
func (m *Model) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		n := m.calls.Add(1)
		if stream {
			m.streamCalls.Add(1)
		}
		d := m.draw()
		if err := sleep(ctx, m.cfg.Latency+d.jitter); err != nil {
			yield(nil, fmt.Errorf("sim: %s: waiting for simulated latency: %w", m.Name(), err))
			return
		}
		resp := m.script(req)
		resp.ProviderRequestID = "sim-" + strconv.FormatInt(n, 10)
		resp.ModelVersion = m.Name()
		resp.TurnComplete = true
		resp.Usage = usage(req, resp)

		if d.fault != "" {
			m.faults[classIndex(d.fault)].Add(1)
		}
		if err := m.thrown(d); err != nil {
			if stream && d.fault == FaultTransport {
				// A dropped stream: the first chunk got through.
				if chunks := split(resp.Content.Text()); len(chunks) > 1 {
					if !yield(partial(resp, chunks[0]), nil) {
						return
					}
				}
			}
			yield(nil, err)
			return
		}
		resp = m.inBand(d.fault, resp)
		switch {
		case d.fault != "":
		case len(resp.FunctionCalls()) > 0:
			m.functionCalls.Add(1)
		default:
			m.finals.Add(1)
		}
		if stream {
			for _, c := range split(resp.Content.Text()) {
				if err := ctx.Err(); err != nil {
					yield(nil, fmt.Errorf("sim: %s: stream: %w", m.Name(), err))
					return
				}
				if !yield(partial(resp, c), nil) {
					return
				}
			}
		}
		yield(resp, nil)
	}
}

func partial(resp *model.Response, text string) *model.Response {
	return &model.Response{
		Content:           model.NewTextContent(model.RoleModel, text),
		Partial:           true,
		ProviderRequestID: resp.ProviderRequestID,
		ModelVersion:      resp.ModelVersion,
	}
}

// split cuts text into two chunks at a rune boundary (one chunk when it is
// shorter than two runes, none when empty).
func split(text string) []string {
	if text == "" {
		return nil
	}
	n := utf8.RuneCountInString(text)
	if n < 2 {
		return []string{text}
	}
	r := []rune(text)
	return []string{string(r[:n/2]), string(r[n/2:])}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// thrown returns the error for a thrown fault, or nil.
func (m *Model) thrown(d draw) error {
	pe := &model.ProviderError{Provider: ProviderName, Err: ErrSimulated}
	switch d.fault {
	case FaultRateLimited:
		pe.StatusCode, pe.Status, pe.RetryAfter = 429, "RESOURCE_EXHAUSTED", m.cfg.RetryAfter
		pe.Message = "simulated: rate limit exceeded, retry later"
	case FaultQuota:
		pe.StatusCode, pe.Status, pe.QuotaExhausted, pe.Code = 429, "RESOURCE_EXHAUSTED", true, "quota_exhausted"
		pe.Message = "simulated: per-day request quota exhausted"
	case FaultServer:
		pe.StatusCode, pe.Status = 503, "UNAVAILABLE"
		pe.Message = "simulated: the model is overloaded"
	case FaultTimeout:
		pe.Status = "DEADLINE_EXCEEDED"
		pe.Message = "simulated: request timed out"
		pe.Err = fmt.Errorf("%w: %w", ErrSimulated, context.DeadlineExceeded)
	case FaultTransport:
		if d.resetConn {
			pe.Message = "simulated: connection reset by peer"
			pe.Err = fmt.Errorf("%w: %w", ErrSimulated, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)})
		} else {
			pe.Message = "simulated: unexpected EOF"
			pe.Err = fmt.Errorf("%w: %w", ErrSimulated, io.ErrUnexpectedEOF)
		}
	default:
		return nil
	}
	return fmt.Errorf("sim: %s: %w", m.Name(), pe)
}

// inBand replaces resp for an in-band fault; other faults leave it alone.
func (m *Model) inBand(f FaultClass, resp *model.Response) *model.Response {
	out := *resp
	switch f {
	case FaultOutputBlocked:
		out.Content = nil
		out.FinishReason = model.FinishReasonSafety
		out.ErrorCode = model.FinishReasonSafety
		out.ErrorMessage = "simulated: output blocked by the safety filter"
	case FaultTruncated:
		text := resp.Content.Text()
		if fc := resp.FunctionCalls(); len(fc) > 0 {
			text = fmt.Sprintf("I will call %s with %v to help with this order.", fc[0].Name, fc[0].Args)
		}
		r := []rune(text)
		out.Content = model.NewTextContent(model.RoleModel, string(r[:max(1, len(r)/2)]))
		out.FinishReason = model.FinishReasonMaxTokens
	case FaultMalformedFunctionCall:
		out.Content = nil
		out.FinishReason = model.FinishReasonMalformedFunctionCall
		out.ErrorCode = model.FinishReasonMalformedFunctionCall
		out.ErrorMessage = "simulated: Malformed function call: get_order(order_id="
	default:
		return resp
	}
	return &out
}

var orderIDRE = regexp.MustCompile(`\b[A-Z]{1,3}-\d{3,}\b`)

// script builds the healthy response for the conversation in req.
func (m *Model) script(req *model.Request) *model.Response {
	var contents []*model.Content
	if req != nil {
		for _, c := range req.Contents {
			if c != nil && !c.IsEmpty() {
				contents = append(contents, c)
			}
		}
	}
	if len(contents) == 0 {
		return textResponse("How can I help you with your order?")
	}
	last := contents[len(contents)-1]
	frs := last.FunctionResponses()
	if len(frs) == 0 {
		return callResponse(ToolGetOrder, map[string]any{"order_id": m.orderIDFromUser(contents)})
	}
	// Handle the most advanced step answered: refund_order over get_order.
	fr := frs[len(frs)-1]
	for _, r := range frs {
		if r.Name == ToolRefundOrder {
			fr = r
		}
	}
	call := findCall(contents, fr)
	if tool.IsErrorMap(fr.Response) {
		return m.afterError(contents, fr, call)
	}
	switch fr.Name {
	case ToolGetOrder:
		orderID := firstString(fr.Response, "order_id")
		if orderID == "" && call != nil {
			orderID, _ = call.Args["order_id"].(string)
		}
		if orderID == "" {
			orderID = m.orderIDFromUser(contents)
		}
		amount, ok := amountCents(fr.Response)
		if !ok {
			return textResponse(fmt.Sprintf("I found order %s but could not tell its amount, so I did not refund it.", orderID))
		}
		return callResponse(ToolRefundOrder, map[string]any{"order_id": orderID, "amount_cents": amount, "reason": m.cfg.RefundReason})
	case ToolRefundOrder:
		orderID := firstString(fr.Response, "order_id")
		amount, ok := amountCents(fr.Response)
		if call != nil {
			if orderID == "" {
				orderID, _ = call.Args["order_id"].(string)
			}
			if !ok {
				amount, ok = cents(call.Args["amount_cents"])
			}
		}
		if !ok {
			return textResponse(fmt.Sprintf("The refund for order %s is done.", orderID))
		}
		return textResponse(fmt.Sprintf("Refunded %d cents for order %s.", amount, orderID))
	default:
		return textResponse(fmt.Sprintf("I got a result from %s, but I don't know what to do with it.", fr.Name))
	}
}

// afterError retries a retryable failed call once, else explains.
func (m *Model) afterError(contents []*model.Content, fr *model.FunctionResponse, call *model.FunctionCall) *model.Response {
	if tool.IsRetryable(fr.Response) && call != nil && responsesSinceUser(contents, fr.Name) < 2 {
		return callResponse(call.Name, call.Args)
	}
	reason := firstString(fr.Response, "reason", "status")
	if reason == "" {
		reason = "unknown error"
	}
	return textResponse(fmt.Sprintf("Sorry, I could not complete your request: %s failed (%s).", fr.Name, reason))
}

// responsesSinceUser counts responses from the named tool after the last
// user text message.
func responsesSinceUser(contents []*model.Content, name string) int {
	n := 0
	for i := len(contents) - 1; i >= 0; i-- {
		c := contents[i]
		frs := c.FunctionResponses()
		if c.Role == model.RoleUser && len(frs) == 0 && c.Text() != "" {
			break
		}
		for _, fr := range frs {
			if fr.Name == name {
				n++
			}
		}
	}
	return n
}

// findCall returns the function call fr answers: same id if it has one,
// else the latest call of the same name.
func findCall(contents []*model.Content, fr *model.FunctionResponse) *model.FunctionCall {
	for i := len(contents) - 1; i >= 0; i-- {
		for _, fc := range contents[i].FunctionCalls() {
			if (fr.ID != "" && fc.ID == fr.ID) || (fr.ID == "" && fc.Name == fr.Name) {
				return fc
			}
		}
	}
	return nil
}

func (m *Model) orderIDFromUser(contents []*model.Content) string {
	for i := len(contents) - 1; i >= 0; i-- {
		c := contents[i]
		if c.Role != model.RoleUser {
			continue
		}
		if id := orderIDRE.FindString(c.Text()); id != "" {
			return id
		}
		if c.Text() != "" {
			break // the latest user message names no order
		}
	}
	return m.cfg.DefaultOrderID
}

func textResponse(text string) *model.Response {
	return &model.Response{Content: model.NewTextContent(model.RoleModel, text), FinishReason: model.FinishReasonStop}
}

// callResponse asks for one tool call. Like Gemini, the simulator assigns
// no call id: the agent loop does.
func callResponse(name string, args map[string]any) *model.Response {
	return &model.Response{
		Content:      &model.Content{Role: model.RoleModel, Parts: []*model.Part{{FunctionCall: &model.FunctionCall{Name: name, Args: args}}}},
		FinishReason: model.FinishReasonStop,
	}
}

func firstString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	if o, ok := m["order"].(map[string]any); ok {
		for _, k := range keys {
			if s, ok := o[k].(string); ok && s != "" {
				return s
			}
		}
	}
	return ""
}

// amountCents reads amount_cents or total_cents, at the top level or under
// "order".
func amountCents(m map[string]any) (int64, bool) {
	for _, obj := range []map[string]any{m, asMap(m["order"])} {
		for _, k := range []string{"amount_cents", "total_cents"} {
			if v, ok := cents(obj[k]); ok {
				return v, true
			}
		}
	}
	return 0, false
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// cents converts the numeric forms a tool result may hold (Go ints, JSON
// float64, json.Number, numeric strings) to a non-negative integer.
func cents(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), x >= 0
	case int32:
		return int64(x), x >= 0
	case int64:
		return x, x >= 0
	case uint32:
		return int64(x), true
	case float64:
		if x < 0 || x > 1<<53 || x != float64(int64(x)) {
			return 0, false
		}
		return int64(x), true
	case interface{ Int64() (int64, error) }: // json.Number
		n, err := x.Int64()
		return n, err == nil && n >= 0
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		return n, err == nil && n >= 0
	}
	return 0, false
}

// approxSize is about the length of v written out (keys, strings, and a
// few characters for anything else), without formatting it: the counts are
// made up anyway, and formatting every argument of the whole history on
// each call cost the simulated model more than the rest of its work.
func approxSize(v any) int {
	switch v := v.(type) {
	case string:
		return len(v) + 2
	case map[string]any:
		n := 2
		for k, e := range v {
			n += len(k) + 4 + approxSize(e)
		}
		return n
	case []any:
		n := 2
		for _, e := range v {
			n += 1 + approxSize(e)
		}
		return n
	default:
		return 6
	}
}

// usage makes up plausible token counts (about four characters a token).
func usage(req *model.Request, resp *model.Response) *model.Usage {
	in := 0
	if req != nil {
		in = len(req.SystemInstruction)
		for _, c := range req.Contents {
			if c == nil {
				continue
			}
			for _, p := range c.Parts {
				if p == nil {
					continue
				}
				in += len(p.Text)
				if p.FunctionCall != nil {
					in += 16 + approxSize(p.FunctionCall.Args)
				}
				if p.FunctionResponse != nil {
					in += 16 + approxSize(p.FunctionResponse.Response)
				}
			}
		}
	}
	out := len(resp.Content.Text()) + 16*len(resp.FunctionCalls())
	u := &model.Usage{PromptTokens: int32(min(in/4+1, 1<<30)), CandidatesTokens: int32(min(out/4+1, 1<<30))}
	u.TotalTokens = u.PromptTokens + u.CandidatesTokens
	return u
}
