package worker

import (
	"fmt"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// resultHeadroom is what a result's publish needs beside the encoded
// result: the subject, the Nats-Msg-Id header and the protocol line.
const resultHeadroom = 4 << 10

// maxResultBytes is the largest encoded result one NATS message carries
// here: the server's max_payload (1 MiB by default) less resultHeadroom;
// 0 when the connection does not know it yet.
func (w *Worker) maxResultBytes() int {
	nc := w.deps.JS.Conn()
	if nc == nil || nc.MaxPayload() <= resultHeadroom {
		return 0
	}
	return int(nc.MaxPayload()) - resultHeadroom
}

// fitResult cuts res.Content, on a rune boundary, until res encodes to at
// most limit bytes, and marks it Truncated when it cut; when the result does
// not fit even without its content, it cuts res.UserMessage the same way.
// A final answer longer than one NATS message could carry (JSON escapes '<',
// '>' and '&' as six bytes each) would otherwise be recorded as completed
// and then fail to publish on every delivery: redelivered forever, never
// answered, never dead-lettered. The cut is deterministic, so the result
// recorded and the one (re-)published are the same bytes. limit <= 0
// changes nothing.
func fitResult(res *envelope.Result, limit int) error {
	if limit <= 0 || maxEncoded(res) <= limit {
		return nil // the usual case, without encoding it once more
	}
	fits := func(r *envelope.Result) (bool, error) {
		data, err := r.Encode()
		return len(data) <= limit, err
	}
	if ok, err := fits(res); ok || err != nil {
		return err
	}
	trial := *res
	trial.Truncated = true
	trial.Content = ""
	ok, err := fits(&trial)
	if err != nil {
		return err
	}
	if ok {
		content, err := longestFitting(res.Content, func(p string) (bool, error) {
			trial.Content = p
			return fits(&trial)
		})
		res.Content, res.Truncated = content, true
		return err
	}
	// Not even without its content: the user message is the other text a
	// result carries (a degraded answer).
	trial.UserMessage = ""
	if ok, err := fits(&trial); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("worker: result of %s does not fit %d bytes even without its content and message", res.InvocationID, limit)
	}
	msg, err := longestFitting(res.UserMessage, func(p string) (bool, error) {
		trial.UserMessage = p
		return fits(&trial)
	})
	res.Content, res.UserMessage, res.Truncated = "", msg, true
	return err
}

// longestFitting returns the longest prefix of full, cut on a rune
// boundary, that fits, by bisection (escaping makes a byte cost 1 to 6
// encoded bytes, so no single cut is right); a rare path: about 20
// encodings of a result this size. The empty prefix must fit.
func longestFitting(full string, fits func(prefix string) (bool, error)) (string, error) {
	prefix := func(n int) string {
		for n > 0 && n < len(full) && !utf8.RuneStart(full[n]) {
			n--
		}
		return full[:n]
	}
	lo, hi := 0, len(full) // prefix(lo) fits, prefix(hi) does not
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := fits(prefix(mid))
		if err != nil {
			return "", err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return prefix(lo), nil
}

// maxEncoded bounds res's encoded size from above without encoding it:
// every string byte escaped to six bytes (\u00XX), plus the keys, numbers
// and punctuation of the envelope.
func maxEncoded(res *envelope.Result) int {
	n := len(res.Content) + len(res.UserMessage) + len(res.ErrorClass) + len(res.InvocationID) + len(res.Status)
	for _, t := range res.ToolsRun {
		n += len(t) + 3 // the quotes and the comma are not escaped, but count them so
	}
	return 6*n + 512
}
