package worker

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet/pkg/dlq"
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
// not fit even without its content, it cuts res.UserMessage the same way,
// and when it does not fit without either, it leaves out the earliest of
// res.ToolsRun too (counted in ToolsRunOmitted). First, whatever the limit,
// it bounds res.ToolsRun (boundToolsRun), which resultFor has done already
// for a result of this version.
// A final answer longer than one NATS message could carry (JSON escapes '<',
// '>' and '&' as six bytes each) would otherwise be recorded as completed
// and then fail to publish on every delivery: redelivered forever, never
// answered, never dead-lettered. The cut is deterministic, so the result
// recorded and the one (re-)published are the same bytes. limit <= 0
// changes nothing else.
func fitResult(res *envelope.Result, limit int) error {
	boundToolsRun(res)
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
		// Not even without either (a server whose max_payload is a few
		// KiB): the earliest tool names go too, as boundToolsRun drops
		// them.
		if err := dropEarliestTools(&trial, fits); err != nil {
			return fmt.Errorf("worker: result of %s does not fit %d bytes even without its content, message and tools: %w", res.InvocationID, limit, err)
		}
		res.Content, res.UserMessage, res.Truncated = "", "", true
		res.ToolsRun, res.ToolsRunOmitted = trial.ToolsRun, trial.ToolsRunOmitted
		return nil
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

// maxToolsRunSize bounds a result's encoded tools_run list as a DLQ entry's
// tools_completed list is bounded (dlq.MaxToolsCompletedSize, 4 KiB: at
// least 61 names of tool.MaxNameLen, hundreds of usual ones).
const maxToolsRunSize = dlq.MaxToolsCompletedSize

// boundToolsRun keeps the last names of res.ToolsRun whose JSON list takes
// at most maxToolsRunSize bytes and adds the number of the others, the
// earliest, to res.ToolsRunOmitted, as a DLQ entry keeps its
// tools_completed. The list spans every run of the invocation: tens of
// thousands of calls made a result that no NATS message could carry, and
// fitResult cut only its texts, so its publish failed on every delivery
// and the message was put back for ever (left open in the twenty-third
// session). The invocation record keeps the result too (a NATS KV entry is
// bounded by max_payload as well). It reslices and never writes to the
// list's backing array; a second call changes nothing.
func boundToolsRun(res *envelope.Result) {
	kept, dropped := dlq.KeepLastNames(res.ToolsRun, maxToolsRunSize)
	if dropped > 0 {
		res.ToolsRun = kept
		res.ToolsRunOmitted += dropped
	}
}

// dropEarliestTools leaves the most recent names of trial.ToolsRun that
// fit, by bisection over how many are kept, and counts the others in
// trial.ToolsRunOmitted. It fails when trial does not fit even without a
// tool name.
func dropEarliestTools(trial *envelope.Result, fits func(*envelope.Result) (bool, error)) error {
	all, omitted := trial.ToolsRun, trial.ToolsRunOmitted
	keep := func(k int) (bool, error) {
		trial.ToolsRun, trial.ToolsRunOmitted = all[len(all)-k:], omitted+len(all)-k
		if k == 0 {
			trial.ToolsRun = nil
		}
		return fits(trial)
	}
	if ok, err := keep(0); err != nil {
		return err
	} else if !ok {
		return errors.New("no room left for the envelope's other fields")
	}
	// keep(lo) fits; keep(hi), the whole list, does not (the caller tried).
	lo, hi := 0, len(all)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := keep(mid)
		if err != nil {
			return err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	_, err := keep(lo)
	return err
}
