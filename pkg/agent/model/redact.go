package model

import "strings"

// RedactedKey replaces a configured API key in the error texts adapters
// return (RedactKey, RedactKeyError).
const RedactedKey = "[redacted]"

// MinRedactedKeyLen is the shortest API key that RedactKey and
// RedactKeyError redact (after trimming spaces): a shorter one is a
// placeholder for a server that wants none ("ollama", "EMPTY"), not a
// secret, and replacing it would garble unrelated words of a message (an
// Ollama model name).
const MinRedactedKeyLen = 8

// RedactKey returns s with every occurrence of key (trimmed of spaces)
// replaced by RedactedKey; s unchanged when key is shorter than
// MinRedactedKeyLen or does not occur. Adapters use it on provider text
// they copy into errors: a server (a LiteLLM proxy set as an adapter's base
// URL) may quote the key it refused.
func RedactKey(s, key string) string {
	key = strings.TrimSpace(key)
	if len(key) < MinRedactedKeyLen || !strings.Contains(s, key) {
		return s
	}
	return strings.ReplaceAll(s, key, RedactedKey)
}

// RedactKeyError returns err, or, when err's text holds key (see
// RedactKey), an error whose text is err's with key redacted and which
// unwraps to err, so classification by type and status (errors.As,
// errors.Is) is unchanged. nil stays nil. It is an adapter's last guard
// over the errors it returns: the text is what the taxonomy logs raw and
// the DLQ keeps as the reason. It cleans the text only: fields of errors
// further down the chain (a provider error's message) are the adapter's to
// redact with RedactKey.
func RedactKeyError(err error, key string) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	if r := RedactKey(text, key); r != text {
		return &redactedError{text: r, err: err}
	}
	return err
}

// redactedError is an error whose text had an API key removed; it unwraps
// to the original error.
type redactedError struct {
	text string
	err  error
}

// Error returns the redacted text.
func (e *redactedError) Error() string { return e.text }

// Unwrap returns the original error.
func (e *redactedError) Unwrap() error { return e.err }

// RedactKeyValue returns a copy of a decoded JSON value (as encoding/json
// decodes into any) with key removed from its strings, object keys
// included, as RedactKey removes it; values of other types are returned as
// they are. The adapters use it on an error's structured details.
func RedactKeyValue(v any, key string) any {
	switch v := v.(type) {
	case string:
		return RedactKey(v, key)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[RedactKey(k, key)] = RedactKeyValue(x, key)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = RedactKeyValue(x, key)
		}
		return out
	}
	return v
}
