package replayer

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
)

// Regression (found in review, twenty-fourth session): an interrupted purge
// --json printed nothing on stdout: a script reading
// the JSON gets no object at all (replay and park --json print their
// summary when interrupted; purge's {"purged","already_gone"} is skipped
// by the early return of purgeInterrupted).
func TestInterruptedPurgeJSONPrintsWhatItDeleted(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("pj", 3, "UNKNOWN", 0)
	proxy := natstest.StartCutProxy(t, strings.TrimPrefix(x.url, "nats://"))
	deleteSent := proxy.SwallowedText("$JS.API.STREAM.MSG.DELETE.")

	stdin, typing := io.Pipe()
	defer typing.Close()
	runCtx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	var o, e syncBuf
	env := Env{Stdout: &o, Stderr: &e, Stdin: stdin, Lookup: x.lookup(map[string]string{"AGENTFLEET_NATS_URL": proxy.URL()}),
		Terminal: func(s any) bool { return s == stdin }}
	exit := make(chan int, 1)
	go func() { exit <- Run(runCtx, []string{"purge", "--class", "UNKNOWN", "--json"}, env) }()
	eventually(t, "the prompt", 30*time.Second, func() bool { return strings.Contains(e.String(), "Type yes to continue") })
	proxy.SetSwallow(true)
	if _, err := io.WriteString(typing, "yes\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-deleteSent:
	case <-ctx.Done():
		t.Fatalf("no delete was sent\n%s", e.String())
	}
	interrupt() // ^C
	code := <-exit
	proxy.SetSwallow(false)
	t.Logf("exit %d\nstdout:\n%q\nstderr:\n%s", code, o.String(), e.String())
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d", code, ExitInterrupted)
	}
	var got map[string]int
	if err := json.Unmarshal([]byte(o.String()), &got); err != nil {
		t.Fatalf("interrupted purge --json: stdout %q is not the JSON object of what it deleted: %v", o.String(), err)
	}
}
