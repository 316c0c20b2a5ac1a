package natskv_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/idempotency/natskv"
)

type restartTool struct {
	fn func(ctx context.Context) (map[string]any, error)
}

func (f restartTool) Name() string        { return "refund" }
func (f restartTool) Description() string { return "test" }
func (f restartTool) Declaration() *model.ToolDeclaration {
	return &model.ToolDeclaration{Name: "refund"}
}
func (f restartTool) Run(ctx context.Context, _ map[string]any) (map[string]any, error) {
	return f.fn(ctx)
}

func restartCtx(inv string) context.Context {
	return tool.WithContext(context.Background(), &tool.Context{InvocationID: inv, Session: session.Key{App: "support", UserID: "u", SessionID: "s"}})
}

// The NATS server (the KV store) goes down while the tool runs; the tool is
// cancelled a margin before its lease ends; the server is back (same store
// dir and port) before that end. The renewer's renewal at the cancel, or
// its short retries, must keep the claim through the NATS KV store while
// the tool winds down: a second owner waiting past the first lease's end
// finds the key in progress.
func TestClaimKeptWhenTheServerIsBackBeforeTheLeaseEnds(t *testing.T) {
	dir := t.TempDir()
	srv := natstest.RunServerAt(t, dir, -1)
	port := srv.Addr().(*net.TCPAddr).Port
	url := srv.ClientURL()
	cfg := natskv.Config{Bucket: "IDEM", Retention: time.Hour, OpTimeout: 2 * time.Second}
	storeA := newStore(t, connect(t, url, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond)), cfg)

	var effects atomic.Int32
	started := make(chan struct{})
	cancelled := make(chan error, 1)
	finish := make(chan struct{})
	// Lease 10 s: the cancel margin is 1 s, the after-cancel retry 250 ms.
	a := idempotency.Wrap(restartTool{fn: func(ctx context.Context) (map[string]any, error) {
		effects.Add(1)
		close(started)
		<-ctx.Done()
		cancelled <- context.Cause(ctx)
		<-finish
		return nil, context.Cause(ctx)
	}}, storeA, idempotency.Options{Lease: 10 * time.Second, RenewInterval: 3 * time.Second, StoreTimeout: 500 * time.Millisecond, WaitTimeout: -1})
	aDone := make(chan struct{})
	go func() {
		defer close(aDone)
		_, _ = a.Run(restartCtx("inv-rs-nats"), nil)
	}()
	defer func() {
		select {
		case <-finish:
		default:
			close(finish)
		}
		<-aDone
	}()
	<-started
	srv.Shutdown()
	srv.WaitForShutdown()
	cause := <-cancelled
	if !errors.Is(cause, idempotency.ErrLeaseExpired) {
		t.Fatalf("setup: cancelled with %v, want ErrLeaseExpired", cause)
	}
	natstest.RunServerAt(t, dir, port) // back, about 1 s before the lease ends

	storeB := newStore(t, connect(t, url), cfg)
	b := idempotency.Wrap(restartTool{fn: func(context.Context) (map[string]any, error) {
		effects.Add(1)
		return tool.OK(nil), nil
	}}, storeB, idempotency.Options{Lease: 10 * time.Second, WaitTimeout: 4 * time.Second})
	_, bErr := b.Run(restartCtx("inv-rs-nats"), nil)
	ran := effects.Load()
	close(finish)
	<-aDone
	if ran != 1 {
		t.Fatalf("the refund ran %d times at once: the NATS server was back before the first owner's lease ended, but its claim was not renewed; second run: %v", ran, bErr)
	}
	if !errors.Is(bErr, idempotency.ErrInProgress) {
		t.Fatalf("second run: %v, want in progress", bErr)
	}
}
