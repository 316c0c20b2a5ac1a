package openai

import (
	"strings"

	"github.com/openai/openai-go/v3"
)

// toolCallDeltas mends the streamed tool-call deltas of OpenAI-compatible
// servers that do not follow OpenAI's form, before the SDK's accumulator
// (which appends every delta to the call its "index" names, and appends
// names) sees them (found in review, twenty-first session):
//
//   - A delta without "index" (Gemini's OpenAI-compatible endpoint,
//     mistral.rs, GLM behind gateways, Ollama through LiteLLM) decodes as
//     index 0, so parallel calls were merged into call 0 (names and
//     arguments concatenated: a MALFORMED_FUNCTION_CALL the model repeats
//     until the call budget is spent). Such a delta is given an index: the
//     index of its id when the id was seen before; the next free index when
//     it carries an id not seen yet and a name (OpenAI's first delta of a
//     call carries both); otherwise, with no id or a new id but no name,
//     the index of the last call a delta went to (a continuation; a new id
//     there is dropped, so the call keeps the id it opened with), or 0
//     when none was opened yet.
//   - A delta that resends the whole name already built for its index
//     (Fireworks, Kimi, MiniMax through NVIDIA NIM send name and id in
//     every chunk) has its name cleared: "get_order" three times was
//     accumulated as "get_orderget_orderget_order". A server that splits a
//     name across chunks still gets it joined, unless a later part equals
//     everything before it ("ab" then "ab"), which no tool name this
//     adapter declares is likely to be. An id resent is harmless: the
//     accumulator assigns ids, it does not append them.
//   - A delta's index is renumbered densely, in the order the indices first
//     appear: the accumulator fills a gap with an empty placeholder call,
//     and servers that number calls from 1, or with gaps (gateways in front
//     of Anthropic or Bedrock that use the content block's index, where
//     block 0 is the text), got a call with no id, no name and no
//     arguments beside the real ones (found in review, twenty-third
//     session). Every delta of one server index goes to the same call, so
//     calls and their arguments stay paired. A server index seen for the
//     first time continues a call opened by deltas without "index", not
//     a new one, when its delta carries that call's id, or carries no id
//     and no name and that call took the last delta (a stream that opens
//     a call without "index" and continues it with "index": 0 was split
//     into two calls; found in review of this session's fix, twenty-third
//     session). An index of -1 is read as 0,
//     as the accumulator does (one call, some providers); any other
//     negative index is left for the accumulator to reject.
//
// One value serves one stream; choices are tracked apart.
type toolCallDeltas struct {
	choices map[int64]*choiceToolCalls
}

// choiceToolCalls is toolCallDeltas' state for one choice.
type choiceToolCalls struct {
	byID  map[string]int64           // the index of every tool-call id seen
	hasID map[int64]bool             // the indices whose call has an id
	names map[int64]*strings.Builder // the name built so far for each index
	dense map[int64]int64            // the index given to each index the server sent
	fixed map[int64]bool             // the indices given to some index the server sent
	last  int64                      // the index the last delta went to; -1 before any
	next  int64                      // the first index above every index given
}

// mend rewrites chunk's tool-call deltas in place (see toolCallDeltas).
func (d *toolCallDeltas) mend(chunk *openai.ChatCompletionChunk) {
	for i := range chunk.Choices {
		ch := &chunk.Choices[i]
		if len(ch.Delta.ToolCalls) == 0 {
			continue
		}
		if d.choices == nil {
			d.choices = make(map[int64]*choiceToolCalls)
		}
		st := d.choices[ch.Index]
		if st == nil {
			st = &choiceToolCalls{byID: make(map[string]int64), hasID: make(map[int64]bool), names: make(map[int64]*strings.Builder), dense: make(map[int64]int64), fixed: make(map[int64]bool), last: -1}
			d.choices[ch.Index] = st
		}
		for j := range ch.Delta.ToolCalls {
			st.mend(&ch.Delta.ToolCalls[j])
		}
	}
}

// mend gives tc an index when it has none, renumbers the one it has
// densely, and clears a resent name.
func (st *choiceToolCalls) mend(tc *openai.ChatCompletionChunkChoiceDeltaToolCall) {
	idx := tc.Index
	if !tc.JSON.Index.Valid() {
		known, seen := st.byID[tc.ID]
		switch {
		case tc.ID != "" && seen:
			idx = known
		case (tc.ID != "" && tc.Function.Name != "") || st.last < 0:
			idx = st.next
		default:
			idx = st.last
			if st.hasID[idx] {
				tc.ID = "" // a continuation keeps its call's first id
			}
			// else the call's id comes after its name: kept (found in
			// review, twenty-first session: the call lost its id)
		}
	} else {
		if idx == -1 {
			idx = 0 // the accumulator's reading of -1 (one call, some providers)
		}
		if idx < 0 {
			return // the accumulator rejects the chunk
		}
		given, seen := st.dense[idx]
		if !seen {
			given = st.next
			if known, ok := st.byID[tc.ID]; tc.ID != "" && ok && !st.fixed[known] {
				given = known // the call its id opened without "index"
			} else if tc.ID == "" && tc.Function.Name == "" && st.last >= 0 && !st.fixed[st.last] {
				given = st.last // a continuation of a call opened without "index"
			}
			st.dense[idx] = given
			st.fixed[given] = true
		}
		idx = given
	}
	tc.Index = idx
	if tc.ID != "" {
		if _, seen := st.byID[tc.ID]; !seen {
			st.byID[tc.ID] = idx
		}
		st.hasID[idx] = true
	}
	st.last = idx
	if idx >= st.next {
		st.next = idx + 1
	}
	if tc.Function.Name == "" {
		return
	}
	b := st.names[idx]
	if b == nil {
		b = &strings.Builder{}
		st.names[idx] = b
	}
	if b.Len() > 0 && b.String() == tc.Function.Name {
		tc.Function.Name = ""
		return
	}
	b.WriteString(tc.Function.Name)
}
