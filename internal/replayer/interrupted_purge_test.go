package replayer

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
)

// Regression (left open in the twenty-third session, fixed in the twenty-fourth): like an
// interrupted replay, a purge that ^C stopped between its deletes ended
// with "after 0 deleted: context canceled". It says how many entries it
// deleted and how many stay in the DLQ (the one whose delete was in flight
// perhaps not); the exit code stays 130.
//
// The purge's connection goes through a proxy that swallows what it sends
// once the prompt was answered, so its first delete gets no answer; ^C
// comes once that delete was sent.
func TestInterruptedPurgeSaysWhatItDeletedAndLeft(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("pg", 3, "UNKNOWN", 0)
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
	go func() { exit <- Run(runCtx, []string{"purge", "--class", "UNKNOWN"}, env) }()
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
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, o.String(), e.String())
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d", code, ExitInterrupted)
	}
	if strings.Contains(e.String(), "context canceled") {
		t.Fatalf("stderr says %q instead of what the purge did", "context canceled")
	}
	contains(t, e.String(), "dlq-replayer purge: interrupted: 0 entries deleted", "the other 3 stay in "+x.sc.DLQStream)
	proxy.SetSwallow(false)
	if n := len(x.dlqIDs()); n != 3 {
		t.Fatalf("the DLQ holds %d entries, want 3 (the swallowed delete never reached the server)", n)
	}
}
