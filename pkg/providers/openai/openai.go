// Package openai adapts OpenAI-compatible chat completion APIs (OpenAI,
// Ollama, vLLM, and others that speak POST /chat/completions) to the
// model.Model contract, through the official SDK
// github.com/openai/openai-go/v3.
//
// One GenerateContent call is one HTTP request: the SDK's retries are off
// (option.WithMaxRetries(0)); retrying belongs to the model decorator above.
//
// Conventions this adapter follows, so that pkg/taxonomy can classify its
// responses the same way as Gemini's (finish reason first, error code only
// when it says more):
//
//   - finish_reason "stop", "tool_calls" and "function_call" map to STOP
//     (function calls travel in the content), "length" to MAX_TOKENS,
//     "content_filter" to SAFETY; an unknown finish reason is kept verbatim.
//   - "tool_calls" or "function_call" with no usable function call and no
//     text is MALFORMED_FUNCTION_CALL (FinishReason and ErrorCode, the raw
//     finish_reason in ErrorMessage), which classifies TOOL_PROTOCOL: the
//     model said it called a tool and no call came, so the empty answer is
//     not a healthy final one.
//   - a choice with no usable content that did not stop normally also sets
//     ErrorCode to the mapped finish reason and ErrorMessage to the raw
//     finish_reason (OpenAI sends no finish message), as ADK does for Gemini.
//   - a refusal (message.refusal) is a SAFETY stop: FinishReason and
//     ErrorCode SAFETY, the refusal text in ErrorMessage.
//   - tool-call arguments that are not a JSON object make the response a
//     MALFORMED_FUNCTION_CALL (FinishReason and ErrorCode), with the raw
//     arguments text in ErrorMessage and no function calls in the content;
//     when the finish reason was "length" (the token limit cut them) it is
//     MAX_TOKENS instead, which classifies TRUNCATED.
//   - no choice at all is ErrorCode model.ErrorCodeUnknown.
//   - streamed tool-call deltas without "index" (several compatible
//     servers) are given one, indices that start above 0 or skip some are
//     renumbered densely, and a name resent whole in every chunk is kept
//     once, before the SDK's accumulator joins them (toolCallDeltas).
//   - a stream's usage is, field by field, the latest non-zero value a
//     chunk gave (OpenAI sends it once, last; Gemini's OpenAI-compatible
//     endpoint and others send a running total on every chunk; gateways in
//     front of Anthropic send prompt tokens first and completion tokens
//     last), never the sum over chunks; its total is at least prompt plus
//     completion tokens (streamUsage).
//   - chunks whose ids differ (proxies that give each chunk its own, or
//     some none) are one stream: the response carries the first id; an
//     id that repeated and then changed, or went back to an earlier one,
//     is two completions in one stream, refused (chunkIDs).
//   - a chunk's top-level "error": null (gateways that always send the
//     member) is no error event: it is removed before the SDK reads the
//     chunk (nullErrorFilter).
//   - an HTTP 400 with the code "invalid_prompt" (the provider's policy
//     check flagged the prompt), or Azure OpenAI's "content_filter", is not thrown: it is a response with no
//     content and ErrorCode PROHIBITED_CONTENT, as a Gemini prompt block.
//
// Thrown errors: an HTTP error status is the SDK's *openai.Error, wrapped
// with %w (also for a proxy's HTML error page). If the SDK cannot decode the
// body's "error" member (a server answering {"error": "text"}), the status
// and text are kept in a *model.ProviderError wrapping the SDK's error. If
// the SDK found no message (a body that is a JSON array, as Gemini's
// OpenAI-compatible endpoint sends, or a top-level "message"), the text of
// the *openai.Error's wrapper carries the provider's message read from the
// body the SDK kept. When the body is a Google error with details
// (google.rpc.Status, as Gemini's OpenAI-compatible endpoint sends, array or
// not), a genai.APIError with the HTTP status, message, status and details
// is in the chain beside the *openai.Error, so pkg/taxonomy and
// retry.ServerHint read it as the Gemini adapter's: an ErrorInfo
// API_KEY_INVALID is AUTH, a QuotaFailure on a daily quota
// QUOTA_EXHAUSTED, a RetryInfo a retry hint; otherwise the class comes
// from the HTTP status. An error
// event inside a stream is a *model.ProviderError (no HTTP status: the
// stream had answered 200) wrapping the SDK's *ssestream.StreamError; its
// StatusCode, which the taxonomy reads, is the status the event's code
// states or its type or code names (OpenAI's words, and Anthropic's error
// types a gateway passes through: overloaded_error 529, api_error 500,
// rate_limit_error 429, authentication_error 401, permission_error 403,
// not_found_error 404, invalid_request_error 400, request_too_large 413,
// timeout_error 504).
//
// The adapter's HTTP client refuses a redirect that leaves the configured
// endpoint's origin (its scheme, host name and port, default ports filled
// in: so also one to another port of the same host, or from https to
// http), which would carry the bearer token there (ErrRedirectRefused, a
// *model.ProviderError with the 3xx status, classified UNKNOWN); a
// Config.HTTPClient's own CheckRedirect still applies to the redirects it
// allows. Without one, a chain of more than ten redirects stops with
// ErrTooManyRedirects, the same kind of error.
//
// No error text the adapter returns holds its configured API key (a server
// may quote the key it refused, as a LiteLLM proxy does; a key shorter than
// 8 characters is a placeholder and is left alone): every occurrence is
// replaced by "[redacted]", in the returned error's text and in the
// messages it carries (*openai.Error's Message, *model.ProviderError's
// Message, *ssestream.StreamError's Message, the genai.APIError's message,
// status and details). The SDK's raw diagnostics (RawJSON, the kept
// response body, DumpRequest) are left as they are.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/providers/internal/redirect"
	"github.com/agentfleet/agentfleet/pkg/retry"
)

// ProviderName is the provider label used in errors and logs.
const ProviderName = "openai"

// DefaultBaseURL is the OpenAI endpoint used when Config.BaseURL is empty.
// It is set explicitly so that OPENAI_BASE_URL in the environment never
// redirects a worker silently.
const DefaultBaseURL = "https://api.openai.com/v1/"

// Config configures an OpenAI-compatible chat model.
type Config struct {
	// APIKey is sent as a bearer token. Required for api.openai.com; local
	// servers (Ollama, vLLM) usually accept any value or none.
	APIKey string
	// Model is the model name, e.g. "gpt-4.1-mini" or "llama3.1:8b".
	// Required. A Request.Model, when set, overrides it for that call.
	Model string
	// BaseURL is the API root including the version segment, e.g.
	// "http://localhost:11434/v1/" for Ollama or "http://vllm:8000/v1/".
	// DefaultBaseURL when empty.
	BaseURL string
	// HTTPClient is the client the SDK uses (net/http's default when nil),
	// copied: the copy refuses a redirect that leaves the configured
	// origin (ErrRedirectRefused), and applies the client's own
	// CheckRedirect to the others.
	HTTPClient *http.Client
	// Headers are extra HTTP headers sent with every request.
	Headers http.Header
	// LegacyMaxTokens sends GenerateConfig.MaxOutputTokens as "max_tokens"
	// instead of "max_completion_tokens", for servers that only know the
	// old field.
	LegacyMaxTokens bool
	// DisableStreamUsage stops asking for usage in streams
	// (stream_options.include_usage), for servers that reject the option.
	DisableStreamUsage bool
}

// WithDefaults returns a copy of c with empty optional fields set.
func (c Config) WithDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	return c
}

// Validate reports the first problem with c (after WithDefaults).
func (c Config) Validate() error {
	if strings.TrimSpace(c.Model) == "" {
		return errors.New("openai: config: Model is required")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return fmt.Errorf("openai: config: BaseURL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("openai: config: BaseURL %q must be an absolute http(s) URL", c.BaseURL)
	}
	if u.Hostname() == "api.openai.com" && strings.TrimSpace(c.APIKey) == "" {
		return errors.New("openai: config: APIKey is required for api.openai.com")
	}
	return nil
}

// Model is an OpenAI-compatible chat model. It implements model.Model and is
// safe for concurrent use.
type Model struct {
	cfg    Config
	client openai.Client
}

var _ model.Model = (*Model)(nil)

// New builds a model from cfg (defaults applied, then validated).
func New(cfg Config) (*Model, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var opts []option.RequestOption
	// Only Config configures the adapter: the headers the SDK takes from
	// the environment (OPENAI_CUSTOM_HEADERS, which may hold an
	// Authorization line, OPENAI_ORG_ID, OPENAI_PROJECT_ID) are removed,
	// so none reaches a configured server (found in review, sixteenth
	// session). Before the key: the SDK sends no key after a later
	// change of the Authorization header.
	for _, h := range environmentHeaders(os.LookupEnv) {
		opts = append(opts, option.WithHeaderDel(h))
	}
	opts = append(opts,
		option.WithBaseURL(cfg.BaseURL),
		// Always set, even when empty, so OPENAI_API_KEY in the environment
		// is never sent to a configured local server.
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
	)
	// A copy of the caller's client (net/http's default when nil) that
	// refuses a redirect leaving the configured origin (ErrRedirectRefused).
	opts = append(opts, option.WithHTTPClient(redirect.Client(ProviderName, cfg.HTTPClient)))
	for k, vs := range cfg.Headers {
		for _, v := range vs {
			opts = append(opts, option.WithHeaderAdd(k, v))
		}
	}
	return &Model{cfg: cfg, client: openai.NewClient(opts...)}, nil
}

// Name returns the configured model name.
func (m *Model) Name() string { return m.cfg.Model }

// GenerateContent makes one chat completion call: one HTTP request, no SDK
// retries. Without streaming it yields one response or one error; with
// streaming it yields partial text responses and then the complete
// response, or an error (possibly after partials).
func (m *Model) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	name := m.cfg.Model
	if req != nil && req.Model != "" {
		name = req.Model
	}
	params, err := ToParams(req, name, m.cfg.LegacyMaxTokens)
	if err != nil {
		return model.Single(nil, m.redactError(fmt.Errorf("openai: build request (model %s): %w", name, err)))
	}
	if stream {
		if !m.cfg.DisableStreamUsage {
			params.StreamOptions.IncludeUsage = openai.Bool(true)
		}
		return m.stream(ctx, name, params)
	}
	return func(yield func(*model.Response, error) bool) {
		var httpResp *http.Response
		cc, err := m.client.Chat.Completions.New(ctx, params, option.WithResponseInto(&httpResp))
		if err != nil {
			if r := blockedPrompt(err); r != nil {
				yield(r, nil)
				return
			}
			yield(nil, m.wrapError(name, err, httpResp))
			return
		}
		out := FromChatCompletion(cc)
		out.TurnComplete = true
		yield(out, nil)
	}
}

func (m *Model) stream(ctx context.Context, name string, params openai.ChatCompletionNewParams) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		var httpResp *http.Response
		s := m.client.Chat.Completions.NewStreaming(ctx, params, option.WithResponseInto(&httpResp), streamBody)
		defer func() { _ = s.Close() }()
		var (
			acc      openai.ChatCompletionAccumulator
			deltas   toolCallDeltas
			agg      model.Aggregator
			chunks   int
			finished bool
			// The call's usage, field by field (streamUsage): the
			// accumulator's sum multiplied running totals.
			tokens streamUsage
			// The chunks' ids, a proxy's mended (chunkIDs).
			ids chunkIDs
		)
		for s.Next() {
			chunk := s.Current()
			chunks++
			tokens.add(chunk.Usage)
			ids.mend(&chunk)
			deltas.mend(&chunk)
			if !acc.AddChunk(chunk) {
				yield(nil, m.redactError(fmt.Errorf("openai: stream (model %s): chunk %d rejected by the accumulator (bad choice or tool-call index): %w",
					name, chunks, errBadStream)))
				return
			}
			var delta string
			for _, ch := range chunk.Choices {
				if ch.Index != 0 {
					continue
				}
				if ch.FinishReason != "" {
					finished = true
				}
				delta += ch.Delta.Content
			}
			if delta == "" {
				continue
			}
			p := agg.Add(&model.Response{
				Content:           model.NewTextContent(model.RoleModel, delta),
				ProviderRequestID: chunk.ID,
				ModelVersion:      chunk.Model,
			})
			if p != nil && !yield(p, nil) {
				return
			}
		}
		if err := s.Err(); err != nil && !cutAfterFinish(ctx, finished, err) {
			if r := blockedPrompt(err); r != nil && chunks == 0 {
				yield(r, nil)
				return
			}
			yield(nil, m.wrapError(name, err, httpResp))
			return
		}
		if !finished {
			yield(nil, m.redactError(fmt.Errorf("openai: stream (model %s) ended after %d chunks without a finish reason: %w",
				name, chunks, io.ErrUnexpectedEOF)))
			return
		}
		acc.ChatCompletion.Usage = tokens.usage()
		out := FromChatCompletion(&acc.ChatCompletion)
		out.TurnComplete = true
		yield(out, nil)
	}
}

// cutAfterFinish reports whether a stream that ended with err had already
// received its answer whole: choice 0 carried a finish reason (every delta
// of a choice comes before its finish chunk), and the stream was then cut
// (the connection dropped before the usage chunk that include_usage sends
// after it, or before [DONE]). The answer is returned without usage. An
// error the server sent stays an error: an API error (*openai.Error) and
// an error event in the stream (*ssestream.StreamError, which the SDK's
// Stream.Next returns for a data line with an "error" field: a gateway's
// output guardrail or a server error after the finish chunk), as does the
// caller's own cancel. Only the in-stream error was missed until the
// twentieth session's review: an answer a guardrail blocked after its
// finish chunk was returned as a clean, complete turn.
func cutAfterFinish(ctx context.Context, finished bool, err error) bool {
	if !finished || ctx.Err() != nil {
		return false
	}
	var apiErr *openai.Error
	var streamErr *ssestream.StreamError
	return !errors.As(err, &apiErr) && !errors.As(err, &streamErr)
}

// CodeInvalidPrompt is the OpenAI error code of an HTTP 400 for a prompt
// its policy check flagged ("Invalid prompt: your prompt was flagged as
// potentially violating our usage policy").
const CodeInvalidPrompt = "invalid_prompt"

// CodeContentFilter is Azure OpenAI's error code of an HTTP 400 for a
// prompt its content filter flagged (inner code
// ResponsibleAIPolicyViolation): the same refusal as CodeInvalidPrompt.
const CodeContentFilter = "content_filter"

// blockedPrompt returns the in-band answer for an error that says the
// provider refused the prompt on policy grounds (CodeInvalidPrompt): a
// response with no content, no finish reason and ErrorCode
// PROHIBITED_CONTENT, as Gemini's prompt feedback block, which pkg/taxonomy
// classifies PROMPT_BLOCKED (a refusal is substituted; the policy view, not
// a page). Any other error: nil.
func blockedPrompt(err error) *model.Response {
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.Code != CodeInvalidPrompt && apiErr.Code != CodeContentFilter {
		return nil
	}
	return &model.Response{
		ErrorCode:    model.FinishReasonProhibitedContent,
		ErrorMessage: apiErr.Code,
		TurnComplete: true,
	}
}

// environmentHeaders lists the request headers openai.NewClient adds from
// the environment that lookup reads.
func environmentHeaders(lookup func(string) (string, bool)) []string {
	var out []string
	if v, ok := lookup("OPENAI_CUSTOM_HEADERS"); ok {
		for _, line := range strings.Split(v, "\n") {
			if name, _, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) != "" {
				out = append(out, strings.TrimSpace(name))
			}
		}
	}
	if _, ok := lookup("OPENAI_ORG_ID"); ok {
		out = append(out, "OpenAI-Organization")
	}
	if _, ok := lookup("OPENAI_PROJECT_ID"); ok {
		out = append(out, "OpenAI-Project")
	}
	return out
}

// errBadStream marks a stream whose chunks could not be accumulated.
var errBadStream = errors.New("malformed stream")

// wrapError wraps an SDK error with the call's context, keeping the SDK's
// types reachable through errors.As (see the package comment), with the
// configured API key removed from its text (redactError).
func (m *Model) wrapError(name string, err error, httpResp *http.Response) error {
	return m.redactError(m.describeError(name, err, httpResp))
}

// describeError builds wrapError's error; every provider text it copies
// has the configured key removed.
func (m *Model) describeError(name string, err error, httpResp *http.Response) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		// The SDK's text is only "<status> <status text>": the body's
		// code and message are what tells an invalid key from a refused
		// parameter to whoever is paged (found in review, sixteenth
		// session).
		apiErr.Message = m.redact(apiErr.Message)
		msg, code := apiErr.Message, apiErr.Code
		if g, ok := bodyGoogleError(apiErr.Response, apiErr.StatusCode); ok {
			// A Google error body's structured details (Gemini's
			// OpenAI-compatible endpoint) decide the class and the wait
			// as through the Gemini adapter: a refused key is AUTH, a
			// spent daily quota QUOTA_EXHAUSTED, RetryInfo a retry hint
			// (found in review, twenty-third session).
			err = &withDetails{err: err, details: m.redactAPIError(g)}
		}
		if msg == "" {
			// A body the SDK could not read the message from (a JSON
			// array, as Gemini's OpenAI-compatible endpoint sends): read
			// it from the body the SDK kept (found in review, nineteenth
			// session).
			bodyMsg, bodyCode := bodyErrorDetail(apiErr.Response)
			if bodyMsg != "" {
				msg = m.redact(bodyMsg)
				if code == "" {
					code = bodyCode
				}
			}
		}
		detail := msg
		if code != "" {
			detail = code + ": " + detail
		}
		if detail == "" {
			return fmt.Errorf("openai: chat completion (model %s): %w", name, err)
		}
		return fmt.Errorf("openai: chat completion (model %s): %w (%s)", name, err, detail)
	}
	if httpResp != nil && httpResp.StatusCode >= 400 {
		// The SDK could not decode the body's "error" (e.g. a server that
		// sends {"error": "text"}); keep the status, and the text if any.
		pe := &model.ProviderError{
			Provider:   ProviderName,
			StatusCode: httpResp.StatusCode,
			Message:    "undecodable error body",
			RequestID:  httpResp.Header.Get("x-request-id"),
			Err:        err,
		}
		// The SDK's error would have carried the response and its
		// Retry-After; this one must carry the hint itself.
		if d, ok := retry.HeaderHint(httpResp.Header, time.Now()); ok {
			pe.RetryAfter = d
		}
		if httpResp.Body != nil {
			// The SDK puts the body it read back for debugging.
			raw, _ := io.ReadAll(io.LimitReader(httpResp.Body, maxErrorBody))
			if e := gjson.GetBytes(raw, "error"); e.Type == gjson.String && e.String() != "" {
				pe.Message = m.redact(e.String())
			}
		}
		return fmt.Errorf("openai: chat completion (model %s): %w", name, pe)
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		se.Message = m.redact(se.Message)
		pe := &model.ProviderError{Provider: ProviderName, Message: se.Message, Err: err, InStream: true}
		e := gjson.GetBytes(se.Event.Data, "error")
		pe.Code = e.Get("code").String()
		pe.Status = e.Get("type").String()
		if msg := e.Get("message").String(); msg != "" {
			pe.Message = m.redact(msg)
		}
		pe.QuotaExhausted = pe.Code == "insufficient_quota" || pe.Status == "insufficient_quota"
		// The event is the stream form of an HTTP error: its type or
		// code names the status the same failure gets before a stream
		// (found in review, seventeenth session: a server_error event was
		// UNKNOWN, never retried).
		// A vLLM server or a LiteLLM proxy puts the status itself in the
		// code (500, "429"); it says more than the type's word (found in
		// review, twenty-first session: such events were UNKNOWN).
		pe.StatusCode = streamCodeStatus(e.Get("code"))
		if pe.StatusCode == 0 {
			pe.StatusCode = streamErrorStatus(pe.Status, pe.Code)
		}
		return fmt.Errorf("openai: stream (model %s): %w", name, pe)
	}
	return fmt.Errorf("openai: chat completion (model %s): %w", name, err)
}

// maxErrorBody bounds how much of an error body the adapter reads.
const maxErrorBody = 4096

// bodyErrorDetail reads the provider's message, and its status or code,
// from the error body the SDK kept in resp (it puts what it read back for
// debugging, and so does this function). It knows the shapes the SDK does
// not: a JSON array whose first element holds the error (Gemini's
// OpenAI-compatible endpoint: [{"error": {"code": 400, "message": "...",
// "status": "INVALID_ARGUMENT"}}]), an "error" that is a string, and a
// top-level "message" or "detail" string (vLLM's older error form,
// FastAPI). Only string messages count; "" when there is none.
func bodyErrorDetail(resp *http.Response) (msg, code string) {
	if resp == nil || resp.Body == nil {
		return "", ""
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(raw), resp.Body))
	if !gjson.ValidBytes(raw) {
		return "", ""
	}
	v := gjson.ParseBytes(raw)
	if v.IsArray() {
		v = v.Get("0")
	}
	if !v.IsObject() {
		return "", ""
	}
	if e := v.Get("error"); e.IsObject() {
		v = e
	} else if e.Type == gjson.String {
		return e.String(), ""
	}
	if mv := v.Get("message"); mv.Type == gjson.String {
		msg = mv.String()
	} else if dv := v.Get("detail"); dv.Type == gjson.String {
		msg = dv.String()
	}
	if msg == "" {
		return "", ""
	}
	for _, k := range []string{"status", "code"} {
		if c := v.Get(k); (c.Type == gjson.String || c.Type == gjson.Number) && c.String() != "" {
			return msg, c.String()
		}
	}
	return msg, ""
}

// bodyGoogleError reads a Google-style error (google.rpc.Status: code,
// message, status and details, as Gemini's OpenAI-compatible endpoint
// sends it, alone or as the first element of a JSON array) from the error
// body the SDK kept in resp, putting the body back as bodyErrorDetail
// does. The error's Code is status, the response's HTTP status. It
// reports false when no detail is a JSON object with an "@type" string:
// Google's details always name their type, and an OpenAI error body that
// also carries untyped details is OpenAI's error, classified by its code
// (found in review of this session's fix, twenty-third session: a 429
// insufficient_quota with details was RATE_LIMITED, as pkg/taxonomy reads
// a genai.APIError before an *openai.Error).
func bodyGoogleError(resp *http.Response, status int) (genai.APIError, bool) {
	if resp == nil || resp.Body == nil {
		return genai.APIError{}, false
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(raw), resp.Body))
	if !gjson.ValidBytes(raw) {
		return genai.APIError{}, false
	}
	v := gjson.ParseBytes(raw)
	if v.IsArray() {
		v = v.Get("0")
	}
	e := v.Get("error")
	if !e.IsObject() || !e.Get("details").IsArray() {
		return genai.APIError{}, false
	}
	g := genai.APIError{Code: status, Message: e.Get("message").String(), Status: e.Get("status").String()}
	typed := false
	for _, d := range e.Get("details").Array() {
		var m map[string]any
		if d.IsObject() && json.Unmarshal([]byte(d.Raw), &m) == nil {
			g.Details = append(g.Details, m)
			if t, ok := m["@type"].(string); ok && t != "" {
				typed = true
			}
		}
	}
	return g, typed
}

// withDetails is an error of the SDK together with the genai.APIError that
// carries the structured details of its body (bodyGoogleError), so that
// pkg/taxonomy and retry.ServerHint read them as they do the Gemini
// adapter's errors. Its text is the SDK error's.
type withDetails struct {
	err     error
	details genai.APIError
}

// Error returns the SDK error's text.
func (e *withDetails) Error() string { return e.err.Error() }

// Unwrap returns the SDK error and the genai.APIError.
func (e *withDetails) Unwrap() []error { return []error{e.err, e.details} }

// redactAPIError returns e with the configured API key removed from its
// texts, Details included (each detail replaced, in e's slice, by a copy
// without the key).
func (m *Model) redactAPIError(e genai.APIError) genai.APIError {
	e.Message = m.redact(e.Message)
	e.Status = m.redact(e.Status)
	for i, d := range e.Details {
		e.Details[i], _ = m.redactValue(d).(map[string]any)
	}
	return e
}

// redactValue returns a copy of a decoded JSON value with the configured
// API key removed (model.RedactKeyValue).
func (m *Model) redactValue(v any) any { return model.RedactKeyValue(v, m.cfg.APIKey) }

// redact returns s with every occurrence of the configured API key
// replaced (model.RedactKey: a key shorter than model.MinRedactedKeyLen is
// a placeholder and left alone).
func (m *Model) redact(s string) string { return model.RedactKey(s, m.cfg.APIKey) }

// redactError returns err, or, when its text holds the configured API key
// (a server that quotes the key it refused, as a LiteLLM proxy does: found
// in review, nineteenth session), an error whose text is err's with the key
// redacted and which unwraps to err (model.RedactKeyError). The adapter is
// the one layer that knows its credential; the text is what the taxonomy
// logs raw and the DLQ keeps as the reason.
func (m *Model) redactError(err error) error { return model.RedactKeyError(err, m.cfg.APIKey) }

// streamErrorStatus is the HTTP status of an error event's type or code
// (0: unknown, left to the rest of the error chain): OpenAI's words, and
// Anthropic's error types, which a gateway in front of Anthropic passes
// through ({"type": "error", "error": {"type": "overloaded_error"}}), each
// the status Anthropic sends it with (found in review, twenty-fifth
// session: they were UNKNOWN, an overloaded server never retried, a
// refused key never paged as AUTH).
func streamErrorStatus(typ, code string) int {
	switch {
	case typ == "server_error" || code == "server_error" || typ == "api_error":
		return http.StatusInternalServerError
	case code == "insufficient_quota" || code == "rate_limit_exceeded" ||
		typ == "rate_limit_exceeded" || typ == "requests" || typ == "tokens" || typ == "insufficient_quota" ||
		typ == "rate_limit_error":
		return http.StatusTooManyRequests
	case typ == "invalid_request_error":
		return http.StatusBadRequest
	case typ == "overloaded_error":
		return 529 // Anthropic's overloaded status (no net/http name)
	case typ == "authentication_error":
		return http.StatusUnauthorized
	case typ == "permission_error":
		return http.StatusForbidden
	case typ == "not_found_error":
		return http.StatusNotFound
	case typ == "request_too_large":
		return http.StatusRequestEntityTooLarge
	case typ == "timeout_error":
		return http.StatusGatewayTimeout
	}
	return 0
}

// streamCodeStatus is the HTTP error status an error event's code states
// outright: a JSON integer (vLLM's create_streaming_error_response sends
// "code": 500) or a string of three digits (a LiteLLM proxy sends
// "code": "429") from 400 through 599. 0 for anything else (OpenAI's words,
// such as "server_error", are streamErrorStatus's).
func streamCodeStatus(code gjson.Result) int {
	var n int
	switch code.Type {
	case gjson.Number:
		if code.Num < 400 || code.Num > 599 || code.Num != math.Trunc(code.Num) {
			return 0
		}
		n = int(code.Num)
	case gjson.String:
		s := code.Str
		if len(s) != 3 || strings.Trim(s, "0123456789") != "" {
			return 0
		}
		n = int(s[0]-'0')*100 + int(s[1]-'0')*10 + int(s[2]-'0')
	default:
		return 0
	}
	if n < 400 || n > 599 {
		return 0
	}
	return n
}

// ToParams maps a model request to chat completion parameters for model
// name. legacyMaxTokens selects "max_tokens" over "max_completion_tokens".
// It fails only when function-call arguments cannot be encoded as JSON.
func ToParams(req *model.Request, name string, legacyMaxTokens bool) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(name)}
	if req == nil {
		return params, nil
	}
	if req.SystemInstruction != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.SystemInstruction))
	}
	for _, c := range req.Contents {
		msgs, err := toMessages(c)
		if err != nil {
			return params, err
		}
		params.Messages = append(params.Messages, msgs...)
	}
	for _, t := range req.Tools {
		if t == nil || t.Name == "" {
			continue
		}
		fd := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fd.Description = openai.String(t.Description)
		}
		if t.Parameters != nil {
			ps, err := schemaMap(t.Parameters)
			if err != nil {
				return params, fmt.Errorf("tool %s: %w", t.Name, err)
			}
			fd.Parameters = ps
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	gc := req.Config
	if gc.Temperature != nil {
		params.Temperature = openai.Float(float64(*gc.Temperature))
	}
	if gc.TopP != nil {
		params.TopP = openai.Float(float64(*gc.TopP))
	}
	if gc.MaxOutputTokens > 0 {
		if legacyMaxTokens {
			params.MaxTokens = openai.Int(int64(gc.MaxOutputTokens))
		} else {
			params.MaxCompletionTokens = openai.Int(int64(gc.MaxOutputTokens))
		}
	}
	if len(gc.StopSequences) > 0 {
		params.Stop.OfStringArray = append([]string(nil), gc.StopSequences...)
	}
	if gc.Seed != nil {
		params.Seed = openai.Int(int64(*gc.Seed))
	}
	if gc.ResponseMIMEType == "application/json" {
		params.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
	}
	return params, nil
}

func schemaMap(s any) (shared.FunctionParameters, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode parameters schema: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("parameters schema is not a JSON object: %w", err)
	}
	return m, nil
}

// toMessages maps one content. A model turn becomes one assistant message
// (text and tool_calls); a user turn becomes one tool message per function
// response (first, so they follow the assistant's tool_calls) and one user
// message for its text.
func toMessages(c *model.Content) ([]openai.ChatCompletionMessageParamUnion, error) {
	if c == nil {
		return nil, nil
	}
	var (
		text  strings.Builder
		calls []openai.ChatCompletionMessageToolCallUnionParam
		out   []openai.ChatCompletionMessageParamUnion
	)
	for _, p := range c.Parts {
		switch {
		case p == nil:
		case p.FunctionCall != nil:
			args := p.FunctionCall.Args
			if args == nil {
				args = map[string]any{}
			}
			raw, err := json.Marshal(args)
			if err != nil {
				return nil, fmt.Errorf("encode arguments of call %s: %w", p.FunctionCall.Name, err)
			}
			calls = append(calls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID:       p.FunctionCall.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: p.FunctionCall.Name, Arguments: string(raw)},
			}})
		case p.FunctionResponse != nil:
			resp := p.FunctionResponse.Response
			if resp == nil {
				resp = map[string]any{}
			}
			raw, err := json.Marshal(resp)
			if err != nil {
				return nil, fmt.Errorf("encode response of call %s: %w", p.FunctionResponse.Name, err)
			}
			out = append(out, openai.ToolMessage(string(raw), p.FunctionResponse.ID))
		default:
			text.WriteString(p.Text)
		}
	}
	if c.Role == model.RoleModel || c.Role == "assistant" {
		if text.Len() == 0 && len(calls) == 0 {
			return out, nil
		}
		var a openai.ChatCompletionAssistantMessageParam
		if text.Len() > 0 {
			a.Content.OfString = param.NewOpt(text.String())
		}
		a.ToolCalls = calls
		return append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a}), nil
	}
	if text.Len() > 0 {
		out = append(out, openai.UserMessage(text.String()))
	}
	return out, nil
}

// FromChatCompletion maps a chat completion (or a stream's accumulation) to
// a model response, following the conventions in the package comment. It
// never panics; a nil completion maps like one without choices.
func FromChatCompletion(cc *openai.ChatCompletion) *model.Response {
	out := &model.Response{}
	if cc == nil || len(cc.Choices) == 0 {
		out.ErrorCode = model.ErrorCodeUnknown
		out.ErrorMessage = string(model.ErrorCodeUnknown)
		if cc != nil {
			out.ProviderRequestID, out.ModelVersion, out.Usage = cc.ID, cc.Model, usage(cc.Usage)
		}
		return out
	}
	out.ProviderRequestID, out.ModelVersion, out.Usage = cc.ID, cc.Model, usage(cc.Usage)
	ch := cc.Choices[0]
	for _, c := range cc.Choices {
		if c.Index == 0 {
			ch = c
			break
		}
	}
	msg := ch.Message
	out.FinishReason = MapFinishReason(ch.FinishReason)

	content := &model.Content{Role: model.RoleModel}
	if msg.Content != "" {
		content.Parts = append(content.Parts, &model.Part{Text: msg.Content})
	}
	var calls []*model.Part
	for _, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom tools are never declared by this adapter
		}
		args, ok := parseArgs(tc.Function.Arguments)
		if !ok {
			return malformed(out, content, tc.Function.Arguments)
		}
		calls = append(calls, &model.Part{FunctionCall: &model.FunctionCall{ID: tc.ID, Name: tc.Function.Name, Args: args}})
	}
	//lint:ignore SA1019 older OpenAI-compatible servers still answer with the single function_call
	if fc := msg.FunctionCall; fc.Name != "" {
		args, ok := parseArgs(fc.Arguments)
		if !ok {
			return malformed(out, content, fc.Arguments)
		}
		calls = append(calls, &model.Part{FunctionCall: &model.FunctionCall{Name: fc.Name, Args: args}})
	}
	content.Parts = append(content.Parts, calls...)
	if len(content.Parts) > 0 {
		out.Content = content
	}
	if msg.Refusal != "" {
		out.FinishReason = model.FinishReasonSafety
		out.ErrorCode = model.FinishReasonSafety
		out.ErrorMessage = msg.Refusal
		return out
	}
	if len(calls) == 0 && strings.TrimSpace(msg.Content) == "" && (ch.FinishReason == "tool_calls" || ch.FinishReason == "function_call") {
		// The model said it called a tool and no usable call came (vLLM
		// with no tool parser match: an empty tool_calls array and null
		// content): an in-band tool-protocol failure the model may
		// correct when asked again, never a healthy empty STOP that the
		// loop would take as the final answer (found in review,
		// nineteenth session).
		// A blank text part (" \n") goes too: the loop asks the model
		// again only for a break without text, and took the blank one as
		// the final answer (found in review of that fix).
		out.Content = nil
		out.FinishReason = model.FinishReasonMalformedFunctionCall
		out.ErrorCode = model.FinishReasonMalformedFunctionCall
		out.ErrorMessage = ch.FinishReason
		return out
	}
	if out.Content == nil && out.FinishReason != "" && out.FinishReason != model.FinishReasonStop {
		out.ErrorCode = out.FinishReason
		out.ErrorMessage = ch.FinishReason
	}
	return out
}

// malformed reports tool-call arguments that do not parse: a malformed call
// (MALFORMED_FUNCTION_CALL), unless the model was stopped by its token limit
// (finish reason "length", out's MAX_TOKENS), which cut the arguments: that
// is a truncation (MAX_TOKENS, classified TRUNCATED), and asking the model
// again under the same limit would cut them again. The raw arguments go in
// ErrorMessage; the unusable call is dropped.
func malformed(out *model.Response, content *model.Content, raw string) *model.Response {
	code := model.FinishReasonMalformedFunctionCall
	if out.FinishReason == model.FinishReasonMaxTokens {
		code = model.FinishReasonMaxTokens
	}
	out.FinishReason = code
	out.ErrorCode = code
	out.ErrorMessage = raw
	if len(content.Parts) > 0 {
		out.Content = content
	}
	return out
}

// parseArgs decodes tool-call arguments. An empty string or JSON null is no
// arguments; anything that is not a JSON object is malformed.
func parseArgs(raw string) (map[string]any, bool) {
	if strings.TrimSpace(raw) == "" {
		return map[string]any{}, true
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		return nil, false
	}
	if args == nil {
		args = map[string]any{}
	}
	return args, true
}

// MapFinishReason maps an OpenAI finish_reason to the Gemini vocabulary (see
// the package comment); "" stays "" and unknown values are kept verbatim.
func MapFinishReason(r string) model.FinishReason {
	switch r {
	case "":
		return ""
	case "stop", "tool_calls", "function_call":
		return model.FinishReasonStop
	case "length":
		return model.FinishReasonMaxTokens
	case "content_filter":
		return model.FinishReasonSafety
	default:
		return model.FinishReason(r)
	}
}

func usage(u openai.CompletionUsage) *model.Usage {
	if u.PromptTokens == 0 && u.CompletionTokens == 0 && u.TotalTokens == 0 {
		return nil
	}
	return &model.Usage{
		PromptTokens:     clamp32(u.PromptTokens),
		CandidatesTokens: clamp32(u.CompletionTokens),
		TotalTokens:      clamp32(u.TotalTokens),
	}
}

func clamp32(v int64) int32 {
	const maxInt32, minInt32 = 1<<31 - 1, -1 << 31
	switch {
	case v > maxInt32:
		return maxInt32
	case v < minInt32:
		return minInt32
	}
	return int32(v)
}
