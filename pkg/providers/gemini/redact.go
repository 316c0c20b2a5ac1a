package gemini

import (
	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// A server set as Config.BaseURL may quote the key it refused (a LiteLLM
// proxy answers 401 "Invalid proxy server token passed. key=<key> not
// found in db"), and genai copies provider text verbatim: the message, or
// the whole raw body when the body is not JSON or has no usable "error"
// member, and the details, all printed by APIError.Error(). The adapter
// removes its configured key from the SDK's error before adding its own
// context (redactSDKError), and once more from every error it returns
// (redactError) (found in review, nineteenth session).

// redactError returns err with the configured API key removed from its
// text (model.RedactKeyError); the chain is kept.
func (m *Model) redactError(err error) error { return model.RedactKeyError(err, m.cfg.APIKey) }

// redactSDKError returns an error from the SDK with the configured API key
// removed: a genai.APIError (value or pointer, the form the SDK returns it
// in: unwrapped) is replaced by a copy whose Message, Status and Details
// hold no key, so what errors.As finds is clean too; the error's text is
// then redacted (redactError). Codes and the structure of Details (the
// RetryInfo, QuotaFailure and ErrorInfo the taxonomy and retry.ServerHint
// read) are unchanged.
func (m *Model) redactSDKError(err error) error {
	switch e := err.(type) {
	case genai.APIError:
		err = m.redactAPIError(e)
	case *genai.APIError:
		if e != nil {
			c := m.redactAPIError(*e)
			err = &c
		}
	}
	return m.redactError(err)
}

// redactAPIError returns a copy of e with the configured API key removed
// from its texts, Details included (a deep copy; e is not changed).
func (m *Model) redactAPIError(e genai.APIError) genai.APIError {
	e.Message = model.RedactKey(e.Message, m.cfg.APIKey)
	e.Status = model.RedactKey(e.Status, m.cfg.APIKey)
	if e.Details != nil {
		details := make([]map[string]any, len(e.Details))
		for i, d := range e.Details {
			if d != nil {
				details[i] = m.redactValue(d).(map[string]any)
			}
		}
		e.Details = details
	}
	return e
}

// redactValue returns a copy of a decoded JSON value with the configured
// API key removed (model.RedactKeyValue).
func (m *Model) redactValue(v any) any { return model.RedactKeyValue(v, m.cfg.APIKey) }
