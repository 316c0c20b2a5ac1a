package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// ProviderName is the provider label used in errors and logs.
const ProviderName = "gemini"

// DefaultBaseURL is the Gemini API endpoint used when Config.BaseURL is empty.
// It is set explicitly so that the SDK's environment fallbacks
// (GOOGLE_GEMINI_BASE_URL) never redirect a worker silently.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/"

// DefaultAPIVersion is the API version used when Config.APIVersion is empty.
const DefaultAPIVersion = "v1beta"

// Config configures a Gemini model.
type Config struct {
	// APIKey is the Gemini API key (sent as x-goog-api-key). Required.
	APIKey string
	// Model is the model name, e.g. "gemini-2.5-flash". Required. A
	// Request.Model, when set, overrides it for that call.
	Model string
	// BaseURL is the API endpoint; DefaultBaseURL when empty. Tests point it
	// at an httptest server; a proxy or regional endpoint also goes here.
	BaseURL string
	// APIVersion is the URL version segment; DefaultAPIVersion when empty.
	APIVersion string
	// HTTPClient is the client the SDK uses; a fresh &http.Client{} when nil.
	HTTPClient *http.Client
	// Headers are extra HTTP headers sent with every request.
	Headers http.Header
	// ClientCallIDPrefix, when not empty, names function-call ids that the
	// agent loop assigned (Gemini did not): ids with this prefix are not sent
	// back to the API, as ADK does with its "adk-" ids. Empty sends every id.
	ClientCallIDPrefix string
}

// WithDefaults returns a copy of c with empty optional fields set.
func (c Config) WithDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.APIVersion == "" {
		c.APIVersion = DefaultAPIVersion
	}
	return c
}

// Validate reports the first problem with c (after WithDefaults).
func (c Config) Validate() error {
	if strings.TrimSpace(c.APIKey) == "" {
		return errors.New("gemini: config: APIKey is required")
	}
	if strings.TrimSpace(c.Model) == "" {
		return errors.New("gemini: config: Model is required")
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil {
			return fmt.Errorf("gemini: config: BaseURL: %w", err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("gemini: config: BaseURL %q must be an absolute http(s) URL", c.BaseURL)
		}
	}
	return nil
}

// Model is a Gemini model behind the genai SDK. It implements model.Model and
// is safe for concurrent use.
type Model struct {
	cfg    Config
	client *genai.Client
}

var _ model.Model = (*Model)(nil)

// New builds a Gemini model from cfg (defaults applied, then validated).
func New(ctx context.Context, cfg Config) (*Model, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	client, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:     cfg.APIKey,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: withStatusTransport(cfg.HTTPClient),
		HTTPOptions: genai.HTTPOptions{
			BaseURL:      cfg.BaseURL,
			APIVersion:   cfg.APIVersion,
			Headers:      cfg.Headers.Clone(),
			RetryOptions: noRetries(),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("gemini: new client: %w", err)
	}
	return &Model{cfg: cfg, client: client}, nil
}

// ErrSDKPanic is matched by errors.Is when the genai SDK panicked while
// decoding a provider response (it type-asserts parts of the JSON without
// checking). The adapter turns that panic into this error: bad provider data
// must not crash a worker.
var ErrSDKPanic = errors.New("genai SDK panicked on the provider response")

func recoverSDK(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %v", ErrSDKPanic, r)
	}
}

// noRetries returns retry options allowing exactly one attempt. A nil
// RetryOptions also means one attempt in genai v1.77, but a non-nil value
// with Attempts unset means five, so the adapter states it explicitly on the
// client and on every request.
func noRetries() *genai.HTTPRetryOptions {
	one := int32(1)
	return &genai.HTTPRetryOptions{Attempts: &one}
}

// Name returns the configured model name.
func (m *Model) Name() string { return m.cfg.Model }

// GenerateContent makes one Gemini call: one HTTP request, no SDK retries.
// Without streaming it yields one response or one error; with streaming it
// yields partial text responses and then the complete response, or an error
// (possibly after partials).
func (m *Model) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	name := m.cfg.Model
	if req != nil && req.Model != "" {
		name = req.Model
	}
	contents, config := ToGenAI(req, m.cfg.ClientCallIDPrefix)
	config.HTTPOptions = &genai.HTTPOptions{RetryOptions: noRetries()}
	// The SDK ignores its own marshalling errors and would send an empty
	// body (e.g. for a NaN in function-call args); refuse such a request.
	if _, err := json.Marshal(map[string]any{"contents": contents, "config": config}); err != nil {
		return model.Single(nil, m.redactError(fmt.Errorf("gemini: encode request (model %s): %w", name, err)))
	}
	if stream {
		return m.stream(ctx, name, contents, config)
	}
	return func(yield func(*model.Response, error) bool) {
		var (
			resp *genai.GenerateContentResponse
			err  error
		)
		cctx, status := recordStatus(ctx)
		func() {
			defer recoverSDK(&err)
			resp, err = m.client.Models.GenerateContent(cctx, name, contents, config)
		}()
		if err != nil {
			yield(nil, m.redactError(fmt.Errorf("gemini: generate content (model %s): %w", name, m.withHTTPStatus(err, status))))
			return
		}
		out := FromGenAI(resp)
		out.TurnComplete = true
		yield(out, nil)
	}
}

// stream runs a streaming call. Text deltas go through model.Aggregator as
// partials; the final response is built from what the whole stream said
// (last finish reason, prompt feedback, usage, ids) with the aggregated
// content, using the same ADK rules as FromGenAI. A stream whose body read
// fails after it had answered (cutAfterFinish) ends with that final
// response too; every other error ends it with the error.
func (m *Model) stream(ctx context.Context, name string, contents []*genai.Content, config *genai.GenerateContentConfig) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		var (
			agg     model.Aggregator
			summary streamSummary
			// inYield tells an SDK panic (recovered) from a panic in the
			// caller's loop body (re-raised).
			inYield bool
			stopped bool
		)
		defer func() {
			if r := recover(); r != nil {
				if inYield || stopped {
					panic(r)
				}
				yield(nil, m.redactError(fmt.Errorf("gemini: stream (model %s) after %d chunks: %w: %v", name, summary.chunks, ErrSDKPanic, r)))
			}
		}()
		cctx, status := recordStatus(ctx)
		for chunk, err := range m.client.Models.GenerateContentStream(cctx, name, contents, config) {
			if err != nil {
				if cutAfterFinish(ctx, summary.answered(), status, err) {
					// The answer is whole: end as a stream that ended
					// cleanly would (found in review, twenty-first session).
					break
				}
				stopped = true
				yield(nil, m.redactError(fmt.Errorf("gemini: stream generate content (model %s) after %d chunks: %w",
					name, summary.chunks, m.withHTTPStatus(err, status))))
				return
			}
			if chunk == nil {
				continue
			}
			summary.observe(chunk)
			if p := agg.Add(FromGenAI(chunk)); p != nil {
				inYield = true
				more := yield(p, nil)
				inYield = false
				if !more {
					stopped = true
					return
				}
			}
		}
		stopped = true
		if !summary.complete() {
			yield(nil, m.redactError(fmt.Errorf("gemini: stream (model %s) ended after %d chunks without a finish reason: %w",
				name, summary.chunks, io.ErrUnexpectedEOF)))
			return
		}
		final := agg.Final()
		out := summary.response()
		if final != nil && !final.Content.IsEmpty() {
			out.Content = final.Content
		}
		if summary.sawCandidate {
			out.ErrorCode, out.ErrorMessage = candidateError(summary.finishReason, summary.finishMessage, !out.Content.IsEmpty())
		}
		out.TurnComplete = true
		yield(out, nil)
	}
}

// streamSummary remembers what a stream said across its chunks.
type streamSummary struct {
	chunks        int
	sawCandidate  bool
	finishReason  genai.FinishReason
	finishMessage string
	feedback      *genai.GenerateContentResponsePromptFeedback
	usage         *genai.GenerateContentResponseUsageMetadata
	responseID    string
	modelVersion  string
}

func (s *streamSummary) observe(chunk *genai.GenerateContentResponse) {
	s.chunks++
	if chunk.ResponseID != "" {
		s.responseID = chunk.ResponseID
	}
	if chunk.ModelVersion != "" {
		s.modelVersion = chunk.ModelVersion
	}
	if chunk.UsageMetadata != nil {
		s.usage = chunk.UsageMetadata
	}
	if chunk.PromptFeedback != nil {
		s.feedback = chunk.PromptFeedback
	}
	if len(chunk.Candidates) > 0 && chunk.Candidates[0] != nil {
		c := chunk.Candidates[0]
		s.sawCandidate = true
		if c.FinishReason != "" {
			s.finishReason = c.FinishReason
			s.finishMessage = c.FinishMessage
		}
	}
}

// complete reports whether a stream that ended cleanly ended the way a
// finished Gemini stream ends: with a finish reason, or with prompt
// feedback and no candidate (a blocked prompt; feedback without a block
// reason then maps, as a response without candidates does in FromGenAI, to
// an in-band model.ErrorCodeUnknown). A stream that broke off is judged by
// answered.
func (s *streamSummary) complete() bool {
	if s.finishReason != "" {
		return true
	}
	return s.feedback != nil && !s.sawCandidate
}

// answered reports whether the stream had delivered its whole answer: a
// finish reason (Gemini sends it on the last chunk, with the usage), or a
// blocked prompt's feedback (a block reason, no candidate). Prompt
// feedback without a block reason (the prompt's safety ratings, which may
// come before the answer) is not an answer (found in review,
// twenty-first session).
func (s *streamSummary) answered() bool {
	if s.finishReason != "" {
		return true
	}
	return s.feedback != nil && s.feedback.BlockReason != "" && !s.sawCandidate
}

// cutAfterFinish reports whether a stream that failed with err had already
// received its answer whole, so that the failure loses nothing: the
// summary had answered (streamSummary.answered) and the failure is the
// response body breaking off (a read error was recorded: the SDK returns
// it, or the half event it could not decode). What the server said stays
// an error: an error event in the stream (a genai.APIError), or one cut
// short (the body broke off inside an error event: the SDK's JSON error
// on it is no genai.APIError; statusRecord.cutInErrorEvent), as does the
// caller's own cancel or deadline, and an SDK error on an intact body (an
// event it could not decode). The OpenAI adapter has the same rule.
func cutAfterFinish(ctx context.Context, answered bool, rec *statusRecord, err error) bool {
	if !answered || ctx.Err() != nil || rec.readErr.Load() == nil || rec.cutInErrorEvent() {
		return false
	}
	var gv genai.APIError
	var gp *genai.APIError
	return !errors.As(err, &gv) && !errors.As(err, &gp)
}

// response maps the summary (without content) through the ADK rules.
func (s *streamSummary) response() *model.Response {
	r := &genai.GenerateContentResponse{
		ResponseID:     s.responseID,
		ModelVersion:   s.modelVersion,
		UsageMetadata:  s.usage,
		PromptFeedback: s.feedback,
	}
	if s.sawCandidate {
		r.Candidates = []*genai.Candidate{{FinishReason: s.finishReason, FinishMessage: s.finishMessage}}
	}
	return FromGenAI(r)
}

// ToGenAI maps a model request to the genai SDK's contents and config.
// Function-call and function-response ids that start with clientIDPrefix
// (when not empty) are left out. Contents without a usable part are
// dropped, because the API rejects empty contents. A nil request maps to
// no contents and an empty config.
func ToGenAI(req *model.Request, clientIDPrefix string) ([]*genai.Content, *genai.GenerateContentConfig) {
	config := &genai.GenerateContentConfig{}
	// Automatic continuation reconnects dropped streams and chains extra
	// requests: never, one call is one HTTP request.
	noContinuation := false
	config.AutomaticContinuation = &noContinuation
	if req == nil {
		return nil, config
	}
	if req.SystemInstruction != "" {
		config.SystemInstruction = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: req.SystemInstruction}}}
	}
	var contents []*genai.Content
	for _, c := range req.Contents {
		if gc := toGenAIContent(c, clientIDPrefix); gc != nil {
			contents = append(contents, gc)
		}
	}
	var decls []*genai.FunctionDeclaration
	for _, t := range req.Tools {
		if t == nil || t.Name == "" {
			continue
		}
		d := &genai.FunctionDeclaration{Name: t.Name, Description: t.Description}
		if t.Parameters != nil {
			// genai sends ParametersJsonSchema as is (JSON Schema), so the
			// jsonschema-go schema needs no conversion to genai.Schema.
			d.ParametersJsonSchema = t.Parameters
		}
		decls = append(decls, d)
	}
	if len(decls) > 0 {
		config.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
	}
	gc := req.Config
	config.Temperature = gc.Temperature
	config.TopP = gc.TopP
	config.MaxOutputTokens = gc.MaxOutputTokens
	if len(gc.StopSequences) > 0 {
		config.StopSequences = append([]string(nil), gc.StopSequences...)
	}
	config.ResponseMIMEType = gc.ResponseMIMEType
	config.Seed = gc.Seed
	return contents, config
}

func toGenAIContent(c *model.Content, clientIDPrefix string) *genai.Content {
	if c == nil {
		return nil
	}
	role := c.Role
	if role == "" {
		role = model.RoleUser
	}
	out := &genai.Content{Role: role}
	for _, p := range c.Parts {
		switch {
		case p == nil:
		case p.FunctionCall != nil:
			out.Parts = append(out.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{
				ID:   sendID(p.FunctionCall.ID, clientIDPrefix),
				Name: p.FunctionCall.Name,
				Args: p.FunctionCall.Args,
			}, ThoughtSignature: p.ThoughtSignature})
		case p.FunctionResponse != nil:
			resp := p.FunctionResponse.Response
			if resp == nil {
				resp = map[string]any{}
			}
			// A number a float64 cannot hold goes as its text (the SDK
			// sent null: sendableValue).
			resp = sendableResponse(resp)
			out.Parts = append(out.Parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{
				ID:       sendID(p.FunctionResponse.ID, clientIDPrefix),
				Name:     p.FunctionResponse.Name,
				Response: resp,
			}})
		case p.Text != "" || len(p.ThoughtSignature) > 0:
			out.Parts = append(out.Parts, &genai.Part{Text: p.Text, ThoughtSignature: p.ThoughtSignature})
		}
	}
	if len(out.Parts) == 0 {
		return nil
	}
	return out
}

func sendID(id, clientIDPrefix string) string {
	if clientIDPrefix != "" && strings.HasPrefix(id, clientIDPrefix) {
		return ""
	}
	return id
}

// FromGenAI maps one genai response (or stream chunk) to a model response,
// exactly as ADK builds an LlmResponse for Gemini (see the package comment).
// Its usage counts a thinking model's thoughts (thoughtsTokenCount, which
// Gemini reports apart from candidatesTokenCount and bills as output) among
// the output tokens, CandidatesTokens, as OpenAI's completion_tokens
// include reasoning tokens, and a built-in tool's prompt
// (toolUsePromptTokenCount: Google Search grounding, URL context, code
// execution) among the input tokens, PromptTokens; TotalTokens is Gemini's
// total, so PromptTokens + CandidatesTokens = TotalTokens. It never panics,
// whatever the response holds; a nil response maps like a response without
// candidates.
func FromGenAI(resp *genai.GenerateContentResponse) *model.Response {
	out := &model.Response{}
	if resp == nil {
		out.ErrorCode = model.ErrorCodeUnknown
		out.ErrorMessage = string(model.ErrorCodeUnknown)
		return out
	}
	out.ProviderRequestID = resp.ResponseID
	out.ModelVersion = resp.ModelVersion
	if u := resp.UsageMetadata; u != nil {
		out.Usage = &model.Usage{
			PromptTokens:     u.PromptTokenCount + u.ToolUsePromptTokenCount,
			CandidatesTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount,
			TotalTokens:      u.TotalTokenCount,
		}
	}
	if len(resp.Candidates) > 0 && resp.Candidates[0] != nil {
		c := resp.Candidates[0]
		out.FinishReason = model.FinishReason(c.FinishReason)
		out.Content = fromGenAIContent(c.Content)
		out.ErrorCode, out.ErrorMessage = candidateError(c.FinishReason, c.FinishMessage, out.Content != nil)
		return out
	}
	if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
		out.ErrorCode = model.FinishReason(pf.BlockReason)
		out.ErrorMessage = pf.BlockReasonMessage
		return out
	}
	out.ErrorCode = model.ErrorCodeUnknown
	out.ErrorMessage = string(model.ErrorCodeUnknown)
	if pf := resp.PromptFeedback; pf != nil && pf.BlockReasonMessage != "" {
		out.ErrorMessage = pf.BlockReasonMessage
	}
	return out
}

// candidateError is ADK's rule for a candidate: no content and a finish
// reason other than STOP is an in-band error carrying that reason.
func candidateError(reason genai.FinishReason, message string, hasContent bool) (model.FinishReason, string) {
	if hasContent || reason == "" || reason == genai.FinishReasonStop {
		return "", ""
	}
	return model.FinishReason(reason), message
}

// fromGenAIContent keeps text (not thoughts) and function calls and
// responses; it returns nil when nothing usable is left.
func fromGenAIContent(c *genai.Content) *model.Content {
	if c == nil {
		return nil
	}
	out := &model.Content{Role: model.RoleModel}
	for _, p := range c.Parts {
		switch {
		case p == nil:
		case p.FunctionCall != nil:
			out.Parts = append(out.Parts, &model.Part{FunctionCall: &model.FunctionCall{
				ID:   p.FunctionCall.ID,
				Name: p.FunctionCall.Name,
				Args: p.FunctionCall.Args,
			}, ThoughtSignature: p.ThoughtSignature})
		case p.FunctionResponse != nil:
			out.Parts = append(out.Parts, &model.Part{FunctionResponse: &model.FunctionResponse{
				ID:       p.FunctionResponse.ID,
				Name:     p.FunctionResponse.Name,
				Response: p.FunctionResponse.Response,
			}})
		case p.Thought:
			// Thought summaries are not part of the answer.
		case p.Text != "" || len(p.ThoughtSignature) > 0:
			// A signature may come on a text part, or on an empty one at
			// the end of a stream: kept, to be sent back.
			out.Parts = append(out.Parts, &model.Part{Text: p.Text, ThoughtSignature: p.ThoughtSignature})
		}
	}
	if len(out.Parts) == 0 {
		return nil
	}
	return out
}
