// Command worker runs agent invocations from NATS JetStream: many replicas
// share one durable consumer. With no NATS URL configured it runs an
// embedded nats-server with JetStream and NATS KV stores, so
// `go run ./cmd/worker` works on a machine with no services.
//
//	go run ./cmd/worker --demo 25                        # try it: 25 requests end to end, then exit
//	go run ./cmd/worker --demo 100 --sim-faults server=0.4   # the seed's bad morning: 40% overload
//	go run ./cmd/worker --nats-url nats://127.0.0.1:4222 --redis-url redis://127.0.0.1:6379/0
//
// Flags and configuration: see configs/worker.yaml. Exit codes: 0 clean
// stop (or demo passed), 1 error (or demo found a lost request or a
// duplicated effect), 2 bad flags or configuration (a misspelt
// AGENTFLEET_ variable too), 130 a demo interrupted.
package main

import (
	"os"

	"github.com/agentfleet/agentfleet/internal/app"
)

func main() { os.Exit(app.WorkerMain(os.Args[1:], os.Stdout, os.Stderr)) }
