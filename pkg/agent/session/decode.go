package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// DecodeJSON is json.Unmarshal for JSON a store wrote and reads back (a
// stored event, session state, an idempotency record's tool result): a
// number held in an interface value (map[string]any, []any, any) decodes
// as a json.Number, which keeps its digits and encodes again as written.
// json.Unmarshal makes it a float64, so an id above 2^53 a tool returned
// (9007199254740993) came back as 9007199254740992 on a replay or a
// resumed invocation, which then told the model another number than the
// first run had. Like json.Unmarshal it refuses anything after the value.
func DecodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("invalid JSON: data after the top-level value")
	}
	return nil
}

// DecodeEvent decodes a stored event into ev with DecodeJSON: numbers in
// tool results (function responses), state deltas and every other
// interface value keep their digits. Function-call arguments are the
// exception: they come back as float64, as the model adapters give them to
// the loop in the first run (the same digits: they were float64 when the
// event was stored). A resumed invocation runs its pending calls with
// them, and the schema validator takes a json.Number for a string.
func DecodeEvent(data []byte, ev *Event) error {
	if err := DecodeJSON(data, ev); err != nil {
		return err
	}
	if ev.Content == nil {
		return nil
	}
	for _, p := range ev.Content.Parts {
		if p != nil && p.FunctionCall != nil {
			for k, v := range p.FunctionCall.Args {
				p.FunctionCall.Args[k] = numbersAsFloat(v)
			}
		}
	}
	return nil
}

// numbersAsFloat returns v with every json.Number in it as the float64
// json.Unmarshal would have made of it (maps and slices changed in place).
// A number float64 cannot hold (1e400) stays a json.Number.
func numbersAsFloat(v any) any {
	switch x := v.(type) {
	case json.Number:
		if f, err := strconv.ParseFloat(string(x), 64); err == nil {
			return f
		}
	case map[string]any:
		for k, e := range x {
			x[k] = numbersAsFloat(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbersAsFloat(e)
		}
	}
	return v
}
