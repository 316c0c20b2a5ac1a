package dlq

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// leaderGet reads the message at seq with a stream message get, which the
// stream's leader answers, whatever the stream allows: Get uses it when a
// direct get (answered by any replica, one that lags included) found no
// message at seq, so that "not found" is the leader's word. The replayer
// decides on it: an entry it planned and can no longer find is taken as
// handled by another replayer and removed without a replay, and a
// replica that had not received the entry yet would make it lose a dead
// letter. The answer carries the entry base64 in JSON, a third larger
// than the entry, but only for an entry a lagging replica did not have.
func (r *Reader) leaderGet(ctx context.Context, seq uint64) (*jetstream.RawStreamMsg, error) {
	opts := r.js.Options()
	if _, ok := ctx.Deadline(); !ok && opts.DefaultTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.DefaultTimeout)
		defer cancel()
	}
	req, err := json.Marshal(struct {
		Seq uint64 `json:"seq"`
	}{seq})
	if err != nil {
		return nil, err
	}
	reply, err := r.js.Conn().RequestWithContext(ctx, apiPrefix(opts)+"STREAM.MSG.GET."+r.cfg.Stream, req)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Error   *jetstream.APIError `json:"error,omitempty"`
		Message *struct {
			Subject  string    `json:"subject"`
			Sequence uint64    `json:"seq"`
			Header   []byte    `json:"hdrs,omitempty"`
			Data     []byte    `json:"data,omitempty"`
			Time     time.Time `json:"time"`
		} `json:"message,omitempty"`
	}
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, fmt.Errorf("stream message get: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return nil, jetstream.ErrMsgNotFound
	case resp.Error != nil:
		return nil, resp.Error
	case resp.Message == nil:
		return nil, jetstream.ErrInvalidJetStreamResponse
	}
	m := resp.Message
	var hdr nats.Header
	if len(m.Header) > 0 {
		if hdr, err = nats.DecodeHeadersMsg(m.Header); err != nil {
			return nil, fmt.Errorf("stream message get: headers: %w", err)
		}
	}
	return &jetstream.RawStreamMsg{Subject: m.Subject, Sequence: m.Sequence, Header: hdr, Data: m.Data, Time: m.Time}, nil
}

// apiPrefix is the JetStream API prefix of a context with opts, as the
// client computes it: APIPrefix (with its final dot), $JS.<domain>.API. for
// a domain, $JS.API. otherwise.
func apiPrefix(opts jetstream.JetStreamOptions) string {
	switch {
	case opts.APIPrefix != "":
		if strings.HasSuffix(opts.APIPrefix, ".") {
			return opts.APIPrefix
		}
		return opts.APIPrefix + "."
	case opts.Domain != "":
		return "$JS." + opts.Domain + ".API."
	}
	return jetstream.DefaultAPIPrefix
}
