package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// JetStream error codes of refusals the server repeats on every start for
// the same configuration and the same live streams (nats.go names no
// constants for them). Restarting cannot help: they are bad configuration.
const (
	// JSReplicasNotSupported: "replicas > 1 not supported in
	// non-clustered mode".
	JSReplicasNotSupported jetstream.ErrorCode = 10074
	// JSStreamInvalidConfig: a stream configuration the server refuses,
	// among them the changes it never makes to a live stream ("stream
	// configuration update can not change retention policy to/from
	// workqueue", "... can not change storage type").
	JSStreamInvalidConfig jetstream.ErrorCode = 10052
	// JSStreamSubjectOverlap: "subjects overlap with an existing stream"
	// (another stream already takes these subjects).
	JSStreamSubjectOverlap jetstream.ErrorCode = 10065
	// JSConsumerWQMultipleUnfiltered: "multiple non-filtered consumers not
	// allowed on workqueue stream".
	JSConsumerWQMultipleUnfiltered jetstream.ErrorCode = 10099
	// JSConsumerWQNotUnique: "filtered consumer not unique on workqueue
	// stream" (another consumer of the work-queue stream takes the same
	// subjects).
	JSConsumerWQNotUnique jetstream.ErrorCode = 10100
)

// ServerRefusal returns err as bad configuration (matching ErrBadConfig,
// and saying what the operator has to do) when it is a JetStream API error
// that the server answers on every start for the same configuration and
// live streams: a stream setting it cannot change on a live stream
// (retention, storage), another stream on the same subjects, another
// consumer taking the same requests from the work-queue stream, replicas
// on an unclustered server. It returns nil for any other error, which a
// restart may fix. The decision is the error code's, never the message's.
func ServerRefusal(err error) error {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return nil
	}
	switch apiErr.ErrorCode {
	case JSReplicasNotSupported:
		return fmt.Errorf("%w: %w (streams.replicas above 1 needs a clustered NATS: set streams.replicas to 1, or run a cluster)", ErrBadConfig, err)
	case JSStreamInvalidConfig:
		return fmt.Errorf("%w: %w (the server refuses this stream configuration on every start. A live stream's retention and storage "+
			"never change: when that is what it refuses, the stream was created with other settings, by hand or by another "+
			"configuration. Drain the stream (requests: let the workers finish what is queued; DLQ: replay or park its entries; "+
			"results: let the producers collect theirs), delete it (nats stream rm <stream>) so that the next start re-creates it "+
			"with these settings, or configure other stream names (streams.requests, streams.results, streams.dlq))", ErrBadConfig, err)
	case JSStreamSubjectOverlap:
		return fmt.Errorf("%w: %w (another stream already takes these subjects, nats stream ls shows which: configure subject "+
			"prefixes no other stream holds (streams.request_prefix, streams.result_prefix, streams.dlq_prefix), or remove "+
			"that stream once it is drained)", ErrBadConfig, err)
	case JSConsumerWQNotUnique, JSConsumerWQMultipleUnfiltered:
		return fmt.Errorf("%w: %w (the requests stream is a work queue and another consumer on it already takes these "+
			"requests: the consumer of an earlier streams.consumer name, or one made by hand. Set streams.consumer back to its "+
			"name, or stop the workers still on it, let it finish what it has pending and delete it "+
			"(nats consumer rm <stream> <consumer>))", ErrBadConfig, err)
	}
	return nil
}

// otherConsumers names the consumers of stream other than own (for the
// operator to find the one that holds a work-queue stream's subjects), or
// "" when there are none or they cannot be listed.
func otherConsumers(ctx context.Context, js jetstream.JetStream, stream, own string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return ""
	}
	names := s.ConsumerNames(ctx)
	var others []string
	for n := range names.Name() {
		if n != own {
			others = append(others, n)
		}
	}
	if names.Err() != nil && !errors.Is(names.Err(), jetstream.ErrEndOfData) {
		return ""
	}
	slices.Sort(others)
	return strings.Join(others, ", ")
}
