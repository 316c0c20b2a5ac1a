package agent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// appendFailsWith is a session store whose writes all fail with err (the
// store is unreachable); reads answer from memory.
type appendFailsWith struct {
	*session.Memory
	err error
}

func (s appendFailsWith) AppendEvent(context.Context, session.Key, *session.Event) error {
	return s.err
}

// Regression (found in review of this session's fix, twenty-third session):
// the runner logged the model error raw when the held user message could
// not be stored either ("invocation failed, and storing its held events
// failed too"), so the LLM gateway's internal host name, its port and the
// resolver's address reached the logs that the taxonomy's "llm error" line
// had just been sanitised to keep them out of.
func TestRunnerFlushFailureLogDoesNotLeakModelHost(t *testing.T) {
	dial := &url.Error{Op: "Post", URL: "https://llm-gateway.corp.internal:8443/v1/chat/completions",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{
			Err: "no such host", Name: "llm-gateway.corp.internal", Server: "10.20.30.40:53", IsNotFound: true}}}
	m := agenttest.NewScriptedModel(agenttest.Step{Err: dial})
	var logs bytes.Buffer
	r := &agent.Runner{Agent: &agent.Agent{Name: "support", Model: m},
		Sessions: appendFailsWith{session.NewMemory(), errors.New("store down")}, Logger: zerolog.New(&logs)}
	_, err := agenttest.Collect(r.Run(context.Background(), agent.RunRequest{InvocationID: "inv-1", UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, "hello")}))
	if err == nil {
		t.Fatal("want an error")
	}
	if !strings.Contains(logs.String(), "storing its held events failed too") {
		t.Fatalf("the scenario did not reach the log line under test; logs: %q (err %v)", logs.String(), err)
	}
	for _, s := range []string{"llm-gateway.corp.internal", "10.20.30.40"} {
		if strings.Contains(logs.String(), s) {
			t.Errorf("a runner log line leaks %q: %s", s, strings.TrimSpace(logs.String()))
		}
	}
}

// Regression (found in review of this session's fix, twenty-third session):
// the same line for a caller that stopped iterating logged the store's
// error raw ("storing held events failed after the caller stopped"), and a
// store error names the store's host and port.
func TestRunnerFlushFailureAfterStopLogDoesNotLeakStoreHost(t *testing.T) {
	m := agenttest.NewScriptedModel(agenttest.Step{Responses: []*model.Response{agenttest.Partial("he"), agenttest.Partial("llo")}})
	storeErr := fmt.Errorf("session store: %w", &net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.IPv4(10, 9, 8, 7), Port: 6379}, Err: errors.New("connect: connection refused")})
	var logs bytes.Buffer
	r := &agent.Runner{Agent: &agent.Agent{Name: "support", Model: m},
		Sessions: appendFailsWith{session.NewMemory(), storeErr}, Logger: zerolog.New(&logs)}
	for _, err := range r.Run(context.Background(), agent.RunRequest{InvocationID: "inv-1", UserID: "u1", SessionID: "s1",
		Stream: true, Message: model.NewTextContent(model.RoleUser, "hello")}) {
		if err != nil {
			t.Fatalf("unexpected error before the first partial: %v", err)
		}
		break // stop at the first partial: the user message is still held
	}
	if !strings.Contains(logs.String(), "after the caller stopped") {
		t.Fatalf("the scenario did not reach the log line under test; logs: %q", logs.String())
	}
	for _, s := range []string{"10.9.8.7", "6379"} {
		if strings.Contains(logs.String(), s) {
			t.Errorf("a runner log line leaks %q: %s", s, strings.TrimSpace(logs.String()))
		}
	}
}
