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
// back to an earlier one, or changes after one repeated, is left for the
// accumulator to reject.
type chunkIDs struct {
	first    string
	previous string
	seen     map[string]bool
	repeated bool
}

// mend gives chunk the stream's first id when its own is one of a
// proxy's.
func (c *chunkIDs) mend(chunk *openai.ChatCompletionChunk) {
	id := chunk.ID
	if id == "" || len(chunk.Choices) == 0 {
		if c.first != "" {
			chunk.ID = c.first
		}
		return
	}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	switch {
	case c.first == "":
		c.first = id
	case id == c.previous:
		c.repeated = true
		chunk.ID = c.first
	case !c.seen[id] && !c.repeated:
		chunk.ID = c.first
	}
	c.seen[id] = true
	c.previous = id
}
