package streams

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Default stream names.
const (
	DefaultRequestsStream = "AGENT_REQUESTS"
	DefaultResultsStream  = "AGENT_RESULTS"
	DefaultDLQStream      = "AGENT_DLQ"
)

// Default subject prefixes (the same as pkg/envelope's).
const (
	DefaultRequestPrefix = envelope.DefaultRequestPrefix
	DefaultResultPrefix  = envelope.DefaultResultPrefix
	DefaultDLQPrefix     = envelope.DefaultDLQPrefix
)

// Default consumer names.
const (
	DefaultWorkerConsumer   = "workers"
	DefaultReplayerConsumer = "dlq-replayer"
)

// Defaults of the durations and limits in Config.
const (
	// DefaultRequestDuplicates is AGENT_REQUESTS' duplicate window: a request
	// published again with the same Nats-Msg-Id (invocation id) within it
	// is dropped by the server.
	DefaultRequestDuplicates = 10 * time.Minute
	// DefaultResultsMaxAge is how long AGENT_RESULTS keeps a result.
	DefaultResultsMaxAge = 24 * time.Hour
	// DefaultDLQMaxAge is how long AGENT_DLQ keeps an entry.
	DefaultDLQMaxAge = 14 * 24 * time.Hour
	// DefaultDLQDuplicates is AGENT_DLQ's duplicate window (dlq-<id>-<n>).
	DefaultDLQDuplicates = 10 * time.Minute
	// DefaultWorkerAckWait is the workers consumer's AckWait; a running
	// invocation extends it with InProgress heartbeats.
	DefaultWorkerAckWait = 60 * time.Second
	// DefaultWorkerMaxAckPending caps unacknowledged requests across the
	// fleet (set it to the fleet's total concurrency).
	DefaultWorkerMaxAckPending = 64
	// DefaultReplayerAckWait is the dlq-replayer consumer's AckWait.
	DefaultReplayerAckWait = 5 * time.Minute
	// DefaultReplayerMaxAckPending caps entries a replayer holds unacked.
	DefaultReplayerMaxAckPending = 1000
	// DefaultReplicas is the streams' replication factor.
	DefaultReplicas = 1
)

// Config names and sizes the streams and consumers. The zero value plus
// WithDefaults is the DESIGN.md topology; every name is configurable so that
// tests (and several fleets on one server) can use their own.
type Config struct {
	// RequestsStream, ResultsStream and DLQStream name the streams
	// (defaults AGENT_REQUESTS, AGENT_RESULTS, AGENT_DLQ).
	RequestsStream string
	ResultsStream  string // ResultsStream names the result stream.
	DLQStream      string // DLQStream names the dead-letter stream.

	// RequestPrefix, ResultPrefix and DLQPrefix are the subject prefixes:
	// requests go to <RequestPrefix>.<agent>, results to
	// <ResultPrefix>.<invocation_id>, DLQ entries to
	// <DLQPrefix>.<class>.<agent>. Defaults agent.requests, agent.results,
	// agent.dlq. No prefix may be a token prefix of another.
	RequestPrefix string
	ResultPrefix  string // ResultPrefix is the result subject prefix.
	DLQPrefix     string // DLQPrefix is the DLQ subject prefix.

	// RequestDuplicates is the requests' duplicate window (default 10m).
	RequestDuplicates time.Duration
	// ResultsMaxAge is the results' MaxAge (default 24h); at least
	// RequestDuplicates + ResultsAgeSlack. The results stream always keeps
	// one message per subject.
	ResultsMaxAge time.Duration
	// DLQMaxAge is the DLQ entries' MaxAge (default 14 days).
	DLQMaxAge time.Duration
	// DLQDuplicates is the DLQ's duplicate window (default 10m, or twice
	// WorkerAckWait when that is longer, at most DLQMaxAge; it must be
	// longer than WorkerAckWait).
	DLQDuplicates time.Duration
	// Replicas is every stream's replication factor (default 1).
	Replicas int
	// Storage is every stream's storage (default file).
	Storage jetstream.StorageType

	// WorkerConsumer names the durable pull consumer of AGENT_REQUESTS
	// (default "workers"). Its MaxDeliver is always unlimited: the worker
	// reads the delivery count from the message metadata and dead-letters
	// past its own limit, so the server never drops a request.
	WorkerConsumer string
	// WorkerStores names the stores the workers keep their idempotency
	// records, sessions and invocation records in ("redis db=0 prefix=af:
	// id=<id>", app.RedisStoresIdentity, the id the stores keep in Redis;
	// "nats-kv"). EnsureWorkerConsumer records it in the worker consumer's
	// description (WorkerConsumerDescription: the id before the rest,
	// which earlier versions read as "redis db=0 prefix=af:") and refuses
	// a worker whose stores differ from the recorded ones
	// (ErrStoresDiffer): a request redelivered from one to the other would
	// run its effects again, because the second store knows nothing of the
	// first's keys. Empty (tests, tools): nothing is checked or recorded.
	WorkerStores string
	// WorkerAckWait is the worker consumer's AckWait (default 60s).
	WorkerAckWait time.Duration
	// WorkerMaxAckPending is the worker consumer's MaxAckPending (default
	// 64): the fleet's total concurrency.
	WorkerMaxAckPending int

	// ReplayerConsumer names the durable pull consumer of AGENT_DLQ
	// (default "dlq-replayer").
	ReplayerConsumer string
	// ReplayerAckWait is its AckWait (default 5m).
	ReplayerAckWait time.Duration
	// ReplayerMaxAckPending is its MaxAckPending (default 1000).
	ReplayerMaxAckPending int
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	def := func(s *string, d string) {
		if *s == "" {
			*s = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	defInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.RequestsStream, DefaultRequestsStream)
	def(&c.ResultsStream, DefaultResultsStream)
	def(&c.DLQStream, DefaultDLQStream)
	def(&c.RequestPrefix, DefaultRequestPrefix)
	def(&c.ResultPrefix, DefaultResultPrefix)
	def(&c.DLQPrefix, DefaultDLQPrefix)
	defDur(&c.RequestDuplicates, DefaultRequestDuplicates)
	defDur(&c.ResultsMaxAge, DefaultResultsMaxAge)
	defDur(&c.DLQMaxAge, DefaultDLQMaxAge)
	defInt(&c.Replicas, DefaultReplicas)
	def(&c.WorkerConsumer, DefaultWorkerConsumer)
	defDur(&c.WorkerAckWait, DefaultWorkerAckWait)
	if c.DLQDuplicates == 0 {
		// A dead letter published again after a crash comes from the
		// redelivery, no earlier than the worker's AckWait: the window
		// covers twice that (the rerun's time included), within the max
		// age.
		c.DLQDuplicates = min(max(DefaultDLQDuplicates, 2*c.WorkerAckWait), c.DLQMaxAge)
	}
	defInt(&c.WorkerMaxAckPending, DefaultWorkerMaxAckPending)
	def(&c.ReplayerConsumer, DefaultReplayerConsumer)
	defDur(&c.ReplayerAckWait, DefaultReplayerAckWait)
	defInt(&c.ReplayerMaxAckPending, DefaultReplayerMaxAckPending)
	// Storage: jetstream.FileStorage is the zero value.
	return c
}

// RequestSubject returns <RequestPrefix>.<agent>.
func (c Config) RequestSubject(agent string) string {
	return envelope.RequestSubject(c.RequestPrefix, agent)
}

// ResultSubject returns <ResultPrefix>.<invocationID>.
func (c Config) ResultSubject(invocationID string) string {
	return envelope.ResultSubject(c.ResultPrefix, invocationID)
}

// DLQSubject returns <DLQPrefix>.<class>.<agent>.
func (c Config) DLQSubject(class, agent string) string {
	return envelope.DLQSubject(c.DLQPrefix, class, agent)
}
