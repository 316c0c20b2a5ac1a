package producercli_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/streams"
)

// Regression (found in review of this session's fix, twenty-fifth
// session): streamsFromEnv (run.go) read the requests' and the results'
// names and prefixes, filled the DLQ's with the defaults and ran the
// whole streams.Config.Validate, which checks every prefix against every
// other. A fleet whose worker moved its DLQ (AGENTFLEET_STREAMS_DLQ_PREFIX)
// may use a request prefix that overlaps the default DLQ prefix ("agent"
// and "agent.dlq"): the worker takes it, but every producer command run
// beside it exited 2 over a DLQ prefix the user never set. Only the four
// settings the producer uses are checked now, among themselves: here the
// send exits 0 and the request is on agent.support, and two of them that
// the worker would refuse (overlapping prefixes, one stream for both) are
// still exit 2 naming the variables.
func TestProducerChecksOnlyTheStreamSettingsItUses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	vars := map[string]string{
		"AGENTFLEET_STREAMS_REQUEST_PREFIX": "agent",
		"AGENTFLEET_STREAMS_RESULT_PREFIX":  "results",
		"AGENTFLEET_STREAMS_DLQ_PREFIX":     "dlq",
	}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	// The worker takes this configuration.
	wc, err := config.LoadWorker(nil, lookup, io.Discard)
	if err != nil {
		t.Fatalf("test premise: the worker refuses the fleet's settings: %v", err)
	}
	sc := streams.Config{RequestPrefix: wc.Streams.RequestPrefix, ResultPrefix: wc.Streams.ResultPrefix,
		DLQPrefix: wc.Streams.DLQPrefix}.WithDefaults()
	if err := sc.Validate(); err != nil {
		t.Fatalf("test premise: the fleet's streams do not validate: %v", err)
	}
	js, _, s := natstest.JetStream(t)
	if _, err := streams.Ensure(ctx, js, sc); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	env := producercli.Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return vars[k] }}
	code := producercli.Run(ctx, []string{"--nats-url", s.ClientURL(), "send",
		"--agent", "support", "--user", "u1", "--session", "s1", "--invocation", "inv-review8d-dlq", "hello"}, env)
	if code != producercli.ExitOK {
		t.Fatalf("producer send beside a fleet the worker accepts (request prefix %q, result prefix %q, DLQ prefix %q): exit %d, want %d\n%s",
			sc.RequestPrefix, sc.ResultPrefix, sc.DLQPrefix, code, producercli.ExitOK, errb.String())
	}
	m, err := js.Stream(ctx, sc.RequestsStream)
	if err != nil {
		t.Fatal(err)
	}
	if msg, err := m.GetLastMsgForSubject(ctx, "agent.support"); err != nil || !bytes.Contains(msg.Data, []byte("inv-review8d-dlq")) {
		t.Fatalf("the request is not on agent.support: %v", err)
	}
	// What the worker would refuse among the producer's own settings is
	// still refused, naming the variables.
	for _, bad := range []map[string]string{
		{"AGENTFLEET_STREAMS_REQUEST_PREFIX": "agent", "AGENTFLEET_STREAMS_RESULT_PREFIX": "agent.results"},
		{"AGENTFLEET_STREAMS_REQUEST_PREFIX": "agent.results", "AGENTFLEET_STREAMS_RESULT_PREFIX": "agent.results"},
		{"AGENTFLEET_STREAMS_REQUESTS": "FLEET", "AGENTFLEET_STREAMS_RESULTS": "FLEET"},
		{"AGENTFLEET_STREAMS_REQUEST_PREFIX": "agent.*"},
		{"AGENTFLEET_STREAMS_RESULTS": "RESULTS.X"},
	} {
		bad["AGENTFLEET_STREAMS_DLQ_PREFIX"] = "dlq" // not what is refused
		if wc, err := config.LoadWorker(nil, func(k string) (string, bool) { v, ok := bad[k]; return v, ok }, io.Discard); err == nil {
			sc := streams.Config{RequestsStream: wc.Streams.Requests, ResultsStream: wc.Streams.Results,
				RequestPrefix: wc.Streams.RequestPrefix, ResultPrefix: wc.Streams.ResultPrefix,
				DLQPrefix: wc.Streams.DLQPrefix}.WithDefaults()
			if err := sc.Validate(); err == nil {
				t.Fatalf("test premise: the worker takes %v", bad)
			}
		}
		var out, errb bytes.Buffer
		env := producercli.Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return bad[k] }}
		code := producercli.Run(ctx, []string{"--nats-url", s.ClientURL(), "await", "inv-review8d-dlq"}, env)
		if code != producercli.ExitUsage {
			t.Errorf("producer await with %v: exit %d, want %d\n%s", bad, code, producercli.ExitUsage, errb.String())
		}
		for k := range bad {
			if k != "AGENTFLEET_STREAMS_DLQ_PREFIX" && !strings.Contains(errb.String(), k) {
				t.Errorf("producer await with %v: %q does not name %s", bad, errb.String(), k)
			}
		}
	}
}
