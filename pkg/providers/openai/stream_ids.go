package openai

import "github.com/openai/openai-go/v3"

// chunkIDs tells a proxy that gives each chunk an id of its own (or some
// none) from a stream that holds two completions, and gives the chunks of
// the first kind the stream's first id: the SDK's accumulator rejects a
// chunk whose id differs from the first one's, and such proxies failed as
// a "malformed stream" (left open in the twenty-third session, fixed in
// the twenty-fourth).
//
// The id is also the accumulator's only check that the chunks belong to
// one completion: a gateway that fails over mid-stream and starts the
// answer again under a new id, or one that interleaves two completions,
// would have its texts glued into one finished answer (found in review,
// twenty-fourth session). Per-chunk ids never repeat, and a completion's
// repeat on every chunk; so an id is rewritten when it is empty, when its
// chunk holds no choice (a usage chunk), when it repeats the previous
// chunk's, or when it is new and no id so far came twice. An id that goes
// back to an earlier one, or changes after one repeated, or repeats after
// chunks under other ids carried content, is left for the accumulator to
// reject. So a proxy whose per-chunk ids repeat (ids from a coarse clock)
// is refused: two of its chunks cannot be told from a restarted answer.
type chunkIDs struct {
	first    string
	previous string
	seen     map[string]bool
	repeated bool
	// content holds the ids (as sent) of the chunks that carried text or
	// tool calls.
	content map[string]bool
}

// mend gives chunk the stream's first id when its own is one of a
// proxy's.
func (c *chunkIDs) mend(chunk *openai.ChatCompletionChunk) {
	id := chunk.ID
	if c.first == "" {
		// The accumulator's first id is the first chunk's that has one,
		// with or without a choice (found in review of the twenty-fourth
		// session's fix: a proxy's first chunk without a choice, as
		// Azure's prompt_filter_results, was not taken).
		c.first = id
	}
	if id == "" || len(chunk.Choices) == 0 {
		if c.first != "" {
			chunk.ID = c.first
		}
		return
	}
	if c.seen == nil {
		c.seen, c.content = map[string]bool{}, map[string]bool{}
	}
	switch {
	case id == c.first:
	case id == c.previous:
		// The first id but the stream's own to come twice is a
		// completion's, not a proxy's per-chunk id: if chunks under
		// other ids carried content already, it restarted the answer
		// after them (a gateway's fail-over after one chunk), and is
		// left to be refused (found in review of the twenty-fourth
		// session's fix: the two answers were glued).
		if c.repeated || !c.contentUnderOthers(id) {
			c.repeated = true
			chunk.ID = c.first
		}
	case !c.seen[id] && !c.repeated:
		chunk.ID = c.first
	}
	c.seen[id] = true
	c.previous = id
	if hasContent(chunk) {
		c.content[id] = true
	}
}

// contentUnderOthers reports whether a chunk with another id than id
// carried content.
func (c *chunkIDs) contentUnderOthers(id string) bool {
	for other := range c.content {
		if other != id {
			return true
		}
	}
	return false
}

// hasContent reports whether chunk carries text, a refusal or tool calls.
func hasContent(chunk *openai.ChatCompletionChunk) bool {
	for _, ch := range chunk.Choices {
		if ch.Delta.Content != "" || ch.Delta.Refusal != "" || len(ch.Delta.ToolCalls) > 0 {
			return true
		}
	}
	return false
}
