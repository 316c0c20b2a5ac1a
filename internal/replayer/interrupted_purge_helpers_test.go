package replayer

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
)

// interruptPurgeMidDelete runs `purge args...` on x's DLQ (seeded by the
// caller) through a proxy that swallows what the purge sends once its
// prompt was answered, so its first delete gets no answer, and ^Cs it once
// that delete was sent. It returns the exit code and the output; the proxy
// passes traffic again when it returns.
func interruptPurgeMidDelete(t *testing.T, x *fx, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx := ctxT(t)
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
	go func() { exit <- Run(runCtx, append([]string{"purge"}, args...), env) }()
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
	code = <-exit
	proxy.SetSwallow(false)
	t.Logf("exit %d\nstdout:\n%q\nstderr:\n%s", code, o.String(), e.String())
	return code, o.String(), e.String()
}
