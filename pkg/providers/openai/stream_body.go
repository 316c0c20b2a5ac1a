package openai

import (
	"bytes"
	"net/http"

	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/agentfleet/agentfleet/pkg/providers/internal/sse"
)

// Some OpenAI-compatible gateways put a top-level "error": null in every
// chunk of a stream. openai-go's Stream.Next takes any top-level "error"
// that exists (gjson's Exists, true for null) for an error event: the
// stream ended at its first chunk with a *ssestream.StreamError without a
// message, classified UNKNOWN (never retried, dead-lettered for review),
// and the answer was lost. A JSON-null error says there is none: the
// adapter removes the member from a successful stream's events before the
// SDK reads them (found in review, twenty-fifth session); an error object
// stays the SDK's error event.

// streamBody is the request option of a streaming call: it reads a
// successful response's body through a nullErrorFilter.
var streamBody = option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	if err == nil && resp != nil && resp.Body != nil && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		resp.Body = sse.NewReader(resp.Body, (&nullErrorFilter{}).edit)
	}
	return resp, err
})

// nullErrorFilter is the sse.Editor of one stream body: it holds each
// event's lines until the blank line that ends it, and returns them as
// they came, unless the event's data (its "data:" lines joined, as the SDK
// joins them) is a JSON object with a top-level "error" that is null: then
// the event's other lines and its data without that member (the other
// members as they came, in their order). The lines of an event the stream
// ends in (without its blank line, which the SDK never reads as an event)
// come out as they came.
type nullErrorFilter struct {
	held []byte // the current event's lines
	data []byte // its data, each line's followed by "\n"
}

// edit implements sse.Editor.
func (f *nullErrorFilter) edit(line []byte) []byte {
	text := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
	if line != nil && len(text) > 0 {
		f.held = append(f.held, line...)
		if name, value, _ := bytes.Cut(text, []byte(":")); string(name) == "data" {
			f.data = append(f.data, bytes.TrimPrefix(value, []byte(" "))...)
			f.data = append(f.data, '\n')
		}
		return nil
	}
	out := f.held
	if line != nil {
		if data, ok := withoutNullError(f.data); ok {
			out = eventWithData(f.held, data)
		}
		out = append(out, line...)
	}
	f.held, f.data = f.held[:0], f.data[:0]
	return out
}

// withoutNullError returns data, a JSON object, without its top-level
// "error" members that are null, and true; false when data is no JSON
// object with such a member (openai-go reads the first "error" member).
func withoutNullError(data []byte) ([]byte, bool) {
	if e := gjson.GetBytes(data, "error"); e.Type != gjson.Null || !e.Exists() || !gjson.ValidBytes(data) {
		return nil, false
	}
	obj := gjson.ParseBytes(data)
	if !obj.IsObject() {
		return nil, false
	}
	out := make([]byte, 0, len(data))
	out = append(out, '{')
	n := 0
	obj.ForEach(func(k, v gjson.Result) bool {
		if k.String() == "error" && v.Type == gjson.Null {
			return true
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, k.Raw...)
		out = append(out, ':')
		out = append(out, v.Raw...)
		n++
		return true
	})
	return append(out, '}'), true
}

// eventWithData returns the lines of event other than its "data:" lines,
// then data as "data:" lines, one per line of data.
func eventWithData(event, data []byte) []byte {
	var out []byte
	for rest := event; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		text := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if name, _, _ := bytes.Cut(text, []byte(":")); string(name) != "data" {
			out = append(out, line...)
		}
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		out = append(out, "data: "...)
		out = append(out, l...)
		out = append(out, '\n')
	}
	return out
}
