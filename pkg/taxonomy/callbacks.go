package taxonomy

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Session state keys written by AfterModel and OnModelError. Session state
// outlives the invocation, so StateErrorInvocation tells a reader whether
// the recorded failure belongs to the invocation it is looking at.
const (
	// StateErrorClass holds the class of the last classified failure.
	StateErrorClass = "llm_error_class"
	// StateErrorChannel holds its channel (thrown|in_band).
	StateErrorChannel = "llm_error_channel"
	// StateErrorInvocation holds the invocation id it happened in.
	StateErrorInvocation = "llm_error_invocation"
	// StateDegraded is true when OnModelError answered with a degraded
	// message instead of escalating (the worker dead-letters such an
	// invocation even though it ended with a final response).
	StateDegraded = "llm_degraded"
	// StateTruncated is the flag AfterModel sets for TRUNCATED, the class
	// whose policy row has Flag (see FlagStateKey).
	StateTruncated = "llm_truncated"
)

// FlagStateKey returns the state key AfterModel sets to true for a class
// whose policy says Flag: "llm_" + the lower-case class name.
func FlagStateKey(c Class) string { return "llm_" + strings.ToLower(string(c)) }

// DefaultRefusal is the text substituted for PROMPT_BLOCKED and
// OUTPUT_BLOCKED responses.
const DefaultRefusal = "I can't help with that request. A person can follow up if needed."

// CallbackOptions configures AfterModel and OnModelError. The zero value
// works: no metrics, no logging, default texts.
type CallbackOptions struct {
	// Model labels metrics and logs. When empty, OnModelError uses the
	// request's model and AfterModel the response's ModelVersion.
	Model string
	// Metrics receives failure counts; nil records nothing.
	Metrics *Metrics
	// Logger receives one line per failure, with the raw message
	// sanitised like a dead letter's reason (tool.SanitizeString: first
	// line, no URLs, hosts or addresses, capped) (page classes at error
	// level, others at warn). The zero value logs nothing.
	Logger zerolog.Logger
	// Refusal replaces blocked responses; empty means DefaultRefusal.
	Refusal string
	// DescribeTool names one completed tool call in the degraded message
	// (e.g. "your refund for order A-1042"). Nil means DefaultDescribeTool.
	DescribeTool func(agent.CompletedTool) string
	// DegradedMessage builds the whole degraded message from the tool
	// calls of this invocation that completed successfully or whose
	// outcome is unknown (CompletedTool.OutcomeUnknown: it may have acted,
	// a wrapped tool that timed out included), in call order. Nil means
	// DefaultDegradedMessage with DescribeTool.
	DegradedMessage func(completed []agent.CompletedTool) string
}

// AfterModel returns an after-model callback that classifies every
// response in band and, for a failure: records it (session state
// StateErrorClass/Channel/Invocation, the failure counter, a log line with
// the raw message sanitised); replaces it with a short refusal when the
// class's policy says Refuse (PROMPT_BLOCKED, OUTPUT_BLOCKED); sets FlagStateKey
// when the policy says Flag (TRUNCATED) and otherwise leaves the response
// alone. Healthy responses pass untouched and record nothing.
func AfterModel(opts CallbackOptions) agent.AfterModelCallback {
	return func(ctx context.Context, cc *agent.CallbackContext, resp *model.Response) (*model.Response, error) {
		name := opts.Model
		if name == "" && resp != nil {
			name = resp.ModelVersion
		}
		f, failed := FailureFromResponse(name, resp)
		if !failed {
			return nil, nil
		}
		opts.record(cc, f)
		p := f.Policy()
		if p.Flag && cc != nil {
			cc.SetState(FlagStateKey(f.Class), true)
		}
		if p.Refuse {
			text := opts.Refusal
			if text == "" {
				text = DefaultRefusal
			}
			return TextResponse(text), nil
		}
		return nil, nil
	}
}

// OnModelError returns an on-model-error callback. It ignores cancellation
// (returns nil: not a failure), and a call refused before the provider
// (model.ErrNotSent, the fleet cooldown) escalates without a degraded
// message, recorded only as the provider failure before it, if any.
// Otherwise it classifies the error, records
// it like AfterModel, and, when the class's policy says Degrade (the
// transient classes, whose retries the decorator has already spent),
// answers with an honest degraded message that names the tool calls that
// already completed in this invocation, and sets StateDegraded. For every
// other class (AUTH, NOT_FOUND, BAD_REQUEST, QUOTA_EXHAUSTED, CALL_BUDGET,
// UNKNOWN) it returns nil so the error escalates to the caller: a friendly
// message for a revoked key would turn a page into silence.
func OnModelError(opts CallbackOptions) agent.OnModelErrorCallback {
	return func(ctx context.Context, cc *agent.CallbackContext, req *model.Request, err error) (*model.Response, error) {
		if err == nil || IsCanceled(err) {
			return nil, nil
		}
		name := opts.Model
		if name == "" && req != nil {
			name = req.Model
		}
		f := FailureFromError(name, err)
		// Not a bare errors.Is: the chain may panic (a typed nil pointer
		// wrapped with %w), which FailureFromError survives and files
		// UNKNOWN; this check must survive it too (found in review,
		// twenty-first session).
		notSent := isInChain(err, model.ErrNotSent)
		if !notSent || f.Class != Unknown {
			// A call refused before the provider (the fleet cooldown) is
			// not a failure; a retry refused after a provider failure
			// records that failure's class (retry.ReasonNotSent).
			opts.record(cc, f)
		}
		if notSent || !f.Policy().Degrade {
			// A refused call escalates: its caller holds the work until
			// the cooldown ends instead of answering a degraded message.
			return nil, nil
		}
		var done []agent.CompletedTool
		if cc != nil {
			for _, t := range cc.CompletedTools() {
				if t.Succeeded() || t.OutcomeUnknown() {
					done = append(done, t)
				}
			}
			cc.SetState(StateDegraded, true)
		}
		msg := opts.DegradedMessage
		if msg == nil {
			describe := opts.DescribeTool
			if describe == nil {
				describe = DefaultDescribeTool
			}
			msg = func(c []agent.CompletedTool) string { return DefaultDegradedMessage(c, describe) }
		}
		return TextResponse(msg(done)), nil
	}
}

func (opts CallbackOptions) record(cc *agent.CallbackContext, f Failure) {
	if cc != nil {
		cc.SetState(StateErrorClass, string(f.Class))
		cc.SetState(StateErrorChannel, string(f.Channel))
		cc.SetState(StateErrorInvocation, cc.InvocationID())
	}
	opts.Metrics.Failure(f)
	p := f.Policy()
	ev := opts.Logger.Warn()
	if p.Page {
		ev = opts.Logger.Error()
	}
	if cc != nil {
		ev = ev.Str("invocation_id", cc.InvocationID()).Str("session_id", cc.Session().SessionID).Str("agent", cc.AgentName())
	}
	// Sanitised: a dial error names the internal host, its port and the
	// resolver's address, and no log line may leak a host (found in
	// review, twenty-third session).
	ev.Str("class", string(f.Class)).Str("channel", string(f.Channel)).
		Str("model", f.Model).Str("code", f.Code).Str("view", string(p.View)).
		Bool("page", p.Page).Str("raw", tool.SanitizeString(f.Raw)).Msg("llm error")
}

// TextResponse returns a complete model turn with one text part (finish
// reason STOP), the shape of a substituted response.
func TextResponse(text string) *model.Response {
	return &model.Response{
		Content:      model.NewTextContent(model.RoleModel, text),
		FinishReason: model.FinishReasonStop,
		TurnComplete: true,
	}
}

// DefaultDegradedMessage is the degraded message for a transient failure
// after retries. It never claims that nothing happened when tools already
// acted: each completed tool call is named with describe, and so is each
// call whose outcome is unknown (CompletedTool.OutcomeUnknown, a wrapped
// tool that timed out included), as being checked; the user is then asked
// not to repeat the request, since a new
// request could do it a second time. Calls that describe names alike are
// named once, as being checked when any of them is.
func DefaultDegradedMessage(completed []agent.CompletedTool, describe func(agent.CompletedTool) string) string {
	return degradedMessage(completed, describe, false)
}

// QueuedDegradedMessage is DefaultDegradedMessage for a caller that keeps
// the request and finishes it later (a worker that dead-letters it for a
// replay, as agentfleet's does): instead of asking the user to try again,
// which would start the work a second time under a new invocation, it says
// the request is queued and need not be sent again.
func QueuedDegradedMessage(completed []agent.CompletedTool, describe func(agent.CompletedTool) string) string {
	return degradedMessage(completed, describe, true)
}

func degradedMessage(completed []agent.CompletedTool, describe func(agent.CompletedTool) string, queued bool) string {
	var names []string
	unknownName := map[string]bool{}
	seen := map[string]bool{}
	for i, t := range completed {
		name := describe(t)
		if t.OutcomeUnknown() && !succeededLater(completed, i) {
			unknownName[name] = true
		}
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	var done, unknown []string
	for _, name := range names {
		if unknownName[name] {
			unknown = append(unknown, name)
		} else {
			done = append(done, name)
		}
	}
	const unavailable = "the assistant service is unavailable right now."
	var parts []string
	if len(done) > 0 {
		parts = append(parts, joinNames(done)+pick(len(done), " was completed", " were completed"))
	}
	if len(unknown) > 0 {
		parts = append(parts, joinNames(unknown)+pick(len(unknown), " may have gone through and is being checked",
			" may have gone through and are being checked"))
	}
	var lead string
	if len(parts) == 0 {
		lead = "Your request was not completed because " + unavailable
	} else {
		lead = upperFirst(strings.Join(parts, ", and ")) + ", but I could not finish the rest of your request because " + unavailable
	}
	switch {
	case queued:
		return lead + " Your request is queued and will be completed later; there is no need to send it again."
	case len(unknown) > 0:
		return lead + " Please do not send the request again: what may have gone through is being checked."
	}
	return lead + " Please try again in a few minutes."
}

// succeededLater reports whether a call after completed[i] with the same
// tool and the same arguments succeeded: that call's effect is known, and
// an earlier attempt of it (a timeout the model retried) is not "being
// checked" (found in review, eighteenth session).
func succeededLater(completed []agent.CompletedTool, i int) bool {
	for _, t := range completed[i+1:] {
		if t.Name == completed[i].Name && t.Succeeded() && reflect.DeepEqual(t.Args, completed[i].Args) {
			return true
		}
	}
	return false
}

// joinNames joins names as a sentence does: "a", "a and b", "a, b and c".
func joinNames(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// DefaultDescribeTool names a completed tool call by its name and
// arguments, e.g. "refund_order (order_id=A-1042)", sanitised and capped
// like a tool error string. Each argument (name=value) is sanitised on
// its own, so a free-text value that looks like SQL or holds an address is
// redacted alone (left out when nothing of it is left), a credential's
// value too ("password=[redacted]"), and the call is still named ("I meant to select M from the size list" blanked the whole
// description, and the user read "[redacted] was completed").
func DefaultDescribeTool(t agent.CompletedTool) string {
	keys := make([]string, 0, len(t.Args))
	for k := range t.Args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := make([]string, 0, len(keys))
	for _, k := range keys {
		// The pair, not the value alone: the credential patterns go by
		// the name ("password=hunter2").
		a := tool.SanitizeString(k + "=" + fmt.Sprint(t.Args[k]))
		if a == "[redacted]" {
			continue // the whole value: naming the call is what matters
		}
		args = append(args, a)
	}
	// Sanitised piece by piece, never as a whole: two ordinary values
	// could make one match ("please select the blue one", "ordered …
	// from the website" read as SQL) and blank the call's name. For the
	// same reason the cap drops whole arguments rather than cut one (a cut
	// can make a match of its own, "1.2.3.4567" → "1.2.3.45").
	s := "the step " + tool.SanitizeString(t.Name)
	if len(args) == 0 {
		return s
	}
	const more = ", …"
	n := utf8.RuneCountInString(s) + len(" ()") + len(more)
	kept := args[:0:0]
	for _, a := range args {
		if n+utf8.RuneCountInString(a)+len(", ") > tool.MaxErrorStringLen {
			break
		}
		kept = append(kept, a)
		n += utf8.RuneCountInString(a) + len(", ")
	}
	switch {
	case len(kept) == len(args):
		return s + " (" + strings.Join(args, ", ") + ")"
	case len(kept) == 0:
		return s + " (…)"
	}
	return s + " (" + strings.Join(kept, ", ") + more + ")"
}

func upperFirst(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[size:]
}
