package redissession_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
)

// BenchmarkInvocationRedisCPU measures what one support invocation's
// session side costs the Redis server, in CPU (used_cpu_user + sys of
// INFO cpu), which a shared machine's load disturbs far less than
// throughput: redis-µs/op. Each op is a new session and invocation, with
// the load generator's events, on the worker's default auto-pipelined
// client, 16 at once:
//   - gate: what the worker sends (EnterWithSession, the two appends
//     before the tools, FinishWithEvents with the last two events);
//   - rpush: the same events in three RPUSHes, the minimal consumer's
//     session I/O (internal/loadgen), the baseline of the same run.
//
// The Redis server must not be busy with anything else while it runs.
func BenchmarkInvocationRedisCPU(b *testing.B) {
	for _, mode := range []string{"gate", "rpush"} {
		b.Run(mode, func(b *testing.B) {
			rdb, prefix := redistest.AutoPipelined(b)
			ctx := context.Background()
			cfg := redissession.Config{Prefix: prefix}
			svc, err := redissession.New(rdb, cfg)
			if err != nil {
				b.Fatal(err)
			}
			gate, err := redissession.NewGate(rdb, cfg)
			if err != nil {
				b.Fatal(err)
			}
			var seq atomic.Int64
			run := func(i int64) error {
				id := fmt.Sprintf("bench-%d", i)
				key := session.Key{App: "support", UserID: "user-" + id, SessionID: "session-" + id}
				evs := supportEvents(id)
				if mode == "rpush" {
					events := prefix + "min:{" + key.UserID + ":" + key.SessionID + "}:events"
					for _, pair := range [][]*session.Event{evs[0:2], evs[2:4], evs[4:6]} {
						if err := rpush(ctx, rdb, events, pair); err != nil {
							return err
						}
					}
					return nil
				}
				owner := "bench/" + id
				running := &session.Invocation{ID: id, Session: key, Status: session.InvocationRunning}
				if _, err := gate.EnterWithSession(ctx, key, owner, 30*time.Second, running, svc); err != nil {
					return err
				}
				for _, pair := range [][]*session.Event{evs[0:2], evs[2:4]} {
					if err := svc.AppendEvents(ctx, key, pair); err != nil {
						return err
					}
				}
				done := &session.Invocation{ID: id, Session: key, Status: session.InvocationCompleted,
					Result: json.RawMessage(`{"status":"completed","content":"Refunded 1013 cents for order A-1001."}`)}
				_, err := gate.FinishWithEvents(ctx, done, key, owner, svc, evs[4:6])
				return err
			}
			b.SetParallelism(8) // 16 at once on GOMAXPROCS=2
			before := serverCPU(b, rdb)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := run(seq.Add(1)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64((serverCPU(b, rdb)-before).Microseconds())/float64(b.N), "redis-µs/op")
			if mode == "gate" {
				// The last op's session holds its six events: the sequence
				// did its writes, not six refusals.
				id := fmt.Sprintf("bench-%d", seq.Load())
				s, err := svc.Get(ctx, session.Key{App: "support", UserID: "user-" + id, SessionID: "session-" + id})
				if err != nil || len(s.Events) != 6 {
					b.Fatalf("session of %s after the run: %v, error %v; want 6 events", id, s, err)
				}
			}
		})
	}
}

// supportEvents returns the six events of one support invocation, as the
// load generator's simulated model produces them: the user message and the
// get_order call, its response and the refund_order call, the refund's
// response and the final answer.
func supportEvents(id string) []*session.Event {
	call := func(n int, name string, args map[string]any) *model.Content {
		return &model.Content{Role: model.RoleModel, Parts: []*model.Part{{FunctionCall: &model.FunctionCall{ID: "call-" + id + "-" + strconv.Itoa(n), Name: name, Args: args}}}}
	}
	resp := func(n int, name string, r map[string]any) *model.Content {
		return &model.Content{Role: model.RoleUser, Parts: []*model.Part{{FunctionResponse: &model.FunctionResponse{ID: "call-" + id + "-" + strconv.Itoa(n), Name: name, Response: r}}}}
	}
	now := time.Now().UTC()
	ev := func(author string, c *model.Content) *session.Event {
		return &session.Event{InvocationID: id, Author: author, Content: c, Timestamp: now}
	}
	return []*session.Event{
		ev(session.AuthorUser, model.NewTextContent(model.RoleUser, "Please refund order A-1001, it arrived damaged.")),
		ev("support", call(1, "get_order", map[string]any{"order_id": "A-1001"})),
		ev("support", resp(1, "get_order", map[string]any{"status": "ok", "order_id": "A-1001", "total_cents": 1013, "refunded_cents": 0})),
		ev("support", call(2, "refund_order", map[string]any{"order_id": "A-1001", "amount_cents": 1013, "reason": "customer request"})),
		ev("support", resp(2, "refund_order", map[string]any{"status": "ok", "order_id": "A-1001", "refunded_cents": 1013})),
		ev("support", model.NewTextContent(model.RoleModel, "Refunded 1013 cents for order A-1001.")),
	}
}

// rpush stores evs as JSON in one RPUSH, as the minimal consumer does.
func rpush(ctx context.Context, rdb redis.UniversalClient, key string, evs []*session.Event) error {
	vals := make([]any, len(evs))
	for i, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		vals[i] = b
	}
	return rdb.RPush(ctx, key, vals...).Err()
}

// serverCPU returns the Redis server's used_cpu_user + used_cpu_sys.
func serverCPU(b *testing.B, rdb redis.UniversalClient) time.Duration {
	b.Helper()
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("INFO cpu: %s: %v", line, err)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}
