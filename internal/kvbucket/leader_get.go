package kvbucket

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// LeaderGet reads key's latest entry in bucket through the bucket stream's
// leader: JetStream's STREAM.MSG.GET request, which only the leader
// answers. jetstream.KeyValue.Get is a direct get on the buckets nats.go
// creates (AllowDirect), and on a replicated bucket any replica answers
// that, one that has not applied the latest write yet included: a lock's
// holder can read "not held" right after its own acknowledged write. A
// store confirms such an answer here before it reports a lost lock or
// claim. A key without an entry, or whose latest entry is a delete or purge
// marker, is jetstream.ErrKeyNotFound. The request goes to js's API
// prefix, or its JetStream domain's, as js's own requests do.
func LeaderGet(ctx context.Context, js jetstream.JetStream, bucket, key string) (jetstream.KeyValueEntry, error) {
	nc := js.Conn()
	if nc == nil {
		return nil, fmt.Errorf("kvbucket: leader get %s/%s: no connection", bucket, key)
	}
	// The API prefix nats.go uses is unexported: a JetStream made with
	// jetstream.NewWithDomain has an empty APIPrefix and the domain's
	// "$JS.<domain>.API." prefix (found in review, twenty-second session:
	// it asked the local JetStream, which has no such bucket).
	opts := js.Options()
	prefix := opts.APIPrefix
	switch {
	case prefix == "" && opts.Domain != "":
		prefix = "$JS." + opts.Domain + ".API."
	case prefix == "":
		prefix = jetstream.DefaultAPIPrefix
	}
	if !strings.HasSuffix(prefix, ".") {
		prefix += "."
	}
	subject := "$KV." + bucket + "." + key
	req, err := json.Marshal(struct {
		LastFor string `json:"last_by_subj"`
	}{subject})
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	msg, err := nc.RequestWithContext(ctx, prefix+"STREAM.MSG.GET."+streamName(bucket), req)
	if err != nil {
		return nil, fmt.Errorf("kvbucket: leader get %s/%s: %w", bucket, key, err)
	}
	var resp struct {
		Message *struct {
			Subject string    `json:"subject"`
			Seq     uint64    `json:"seq"`
			Header  []byte    `json:"hdrs,omitempty"`
			Data    []byte    `json:"data,omitempty"`
			Time    time.Time `json:"time"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, fmt.Errorf("kvbucket: leader get %s/%s: decode reply: %w", bucket, key, err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil, jetstream.ErrKeyNotFound
		}
		return nil, fmt.Errorf("kvbucket: leader get %s/%s: %w", bucket, key, resp.Error)
	}
	if resp.Message == nil {
		return nil, fmt.Errorf("kvbucket: leader get %s/%s: reply without a message", bucket, key)
	}
	op := jetstream.KeyValuePut
	if len(resp.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(resp.Message.Header)
		if err != nil {
			return nil, fmt.Errorf("kvbucket: leader get %s/%s: decode headers: %w", bucket, key, err)
		}
		switch h.Get("KV-Operation") {
		case "DEL":
			op = jetstream.KeyValueDelete
		case "PURGE":
			op = jetstream.KeyValuePurge
		}
	}
	if op != jetstream.KeyValuePut {
		return nil, jetstream.ErrKeyNotFound
	}
	return &leaderEntry{bucket: bucket, key: key, value: resp.Message.Data, rev: resp.Message.Seq, created: resp.Message.Time}, nil
}

// ConfirmDelays are the waits between the reads a store makes before it
// tells an owner it lost its claim or lock: the leader's answer, then two
// more after these delays. A leader elected a moment ago may not have
// applied the last writes yet (seen once under heavy load on a three-node
// test cluster); the cost is paid only on a refusal.
var ConfirmDelays = []time.Duration{50 * time.Millisecond, 250 * time.Millisecond}

// LeaderConfirm reads key through the leader (LeaderGet) until refused
// returns false for the entry (or its absence, e nil), at most
// 1+len(ConfirmDelays) times, and returns the last read. ctx ending stops
// the waits.
func LeaderConfirm(ctx context.Context, js jetstream.JetStream, bucket, key string, refused func(e jetstream.KeyValueEntry, err error) bool) (jetstream.KeyValueEntry, error) {
	e, err := LeaderGet(ctx, js, bucket, key)
	for _, d := range ConfirmDelays {
		if !refused(e, err) {
			break
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return e, err
		case <-t.C:
		}
		e, err = LeaderGet(ctx, js, bucket, key)
	}
	return e, err
}

// leaderEntry is a jetstream.KeyValueEntry read by LeaderGet.
type leaderEntry struct {
	bucket, key string
	value       []byte
	rev         uint64
	created     time.Time
}

// Bucket implements jetstream.KeyValueEntry.
func (e *leaderEntry) Bucket() string { return e.bucket }

// Key implements jetstream.KeyValueEntry.
func (e *leaderEntry) Key() string { return e.key }

// Value implements jetstream.KeyValueEntry.
func (e *leaderEntry) Value() []byte { return e.value }

// Revision implements jetstream.KeyValueEntry: the entry's stream sequence.
func (e *leaderEntry) Revision() uint64 { return e.rev }

// Created implements jetstream.KeyValueEntry: when the server stored it.
func (e *leaderEntry) Created() time.Time { return e.created }

// Delta implements jetstream.KeyValueEntry; a read has none.
func (e *leaderEntry) Delta() uint64 { return 0 }

// Operation implements jetstream.KeyValueEntry: always a put (LeaderGet
// reports delete and purge markers as jetstream.ErrKeyNotFound).
func (e *leaderEntry) Operation() jetstream.KeyValueOp { return jetstream.KeyValuePut }
