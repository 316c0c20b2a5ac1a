package producercli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/client/clienttest"
)

const batchFile = `{"agent":"support","user_id":"u1","session_id":"s1","text":"one"}
{"agent":"support","user_id":"u2","session_id":"s2","text":"two"}
{"invocation_id":"fixed-3","agent":"support","user_id":"u3","session_id":"s3","text":"three"}
{"agent":"support","user_id":"u4","session_id":"s4","text":"please [fail]"}
{"agent":"support","user_id":"u5","session_id":"s5","text":"please [dlq]"}
{"agent":"support","user_id":"u1","session_id":"s1","text":"one"}
this line is broken
`

func lastRequestSeq(ctx context.Context, t *testing.T, js jetstream.JetStream, stream string) uint64 {
	t.Helper()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

func count(results []producercli.LineResult) map[producercli.Outcome]int {
	out := map[producercli.Outcome]int{}
	for _, r := range results {
		out[r.Outcome]++
	}
	return out
}

func TestRunBatchTwiceRunsNothingAgain(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := clienttest.Start(t, tg.JS, tg.Cfg, clienttest.Echo)
	c, err := client.New(tg.JS, tg.NC, producercli.ClientConfig(tg.Cfg))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := producercli.ParseBatch(strings.NewReader(batchFile))
	if err != nil {
		t.Fatal(err)
	}
	opts := producercli.BatchOptions{Concurrency: 3, Rate: 100, Timeout: 10 * time.Second}

	first, err := producercli.RunBatch(ctx, c, lines, opts)
	if err != nil {
		t.Fatal(err)
	}
	got := count(first)
	want := map[producercli.Outcome]int{
		producercli.OutcomeCompleted: 3, producercli.OutcomeFailed: 1, producercli.OutcomeDeadLettered: 1,
		producercli.OutcomeDuplicateLine: 1, producercli.OutcomeInvalid: 1,
	}
	if !equal(got, want) {
		t.Fatalf("first run outcomes %v, want %v", got, want)
	}
	for i, r := range first {
		if r.Line != lines[i].No {
			t.Fatalf("results out of line order: %+v", first)
		}
	}
	var classes []string
	for _, r := range first {
		if r.Class != "" {
			classes = append(classes, string(r.Outcome)+"/"+r.Class)
		}
	}
	if strings.Join(classes, ",") != "failed/AUTH,dead_lettered/SERVER" {
		t.Fatalf("classes %v", classes)
	}
	seqAfterFirst := lastRequestSeq(ctx, t, tg.JS, tg.Cfg.RequestsStream)
	if seqAfterFirst != 5 {
		t.Fatalf("first run stored %d requests, want 5", seqAfterFirst)
	}

	// A result can reach RunBatch live before the stream stores it; the
	// rerun looks results up, so wait until they are stored.
	streamstest.WaitDrained(ctx, t, tg)
	second, err := producercli.RunBatch(ctx, c, lines, opts)
	if err != nil {
		t.Fatal(err)
	}
	got = count(second)
	want = map[producercli.Outcome]int{
		producercli.OutcomeSkipped: 3, producercli.OutcomeFailed: 1, producercli.OutcomeDeadLettered: 1,
		producercli.OutcomeDuplicateLine: 1, producercli.OutcomeInvalid: 1,
	}
	if !equal(got, want) {
		t.Fatalf("second run outcomes %v, want %v", got, want)
	}
	for _, r := range second {
		if r.Outcome == producercli.OutcomeSkipped && r.Submitted {
			t.Fatalf("completed line %d was submitted again", r.Line)
		}
		if r.Submitted && !r.Duplicate {
			t.Fatalf("line %d stored a new request on the rerun", r.Line)
		}
		// A dead-lettered or failed line is not sent again: once the
		// stream's duplicate window has passed, the worker would answer a
		// resubmission from its record and publish nothing, and the line
		// would wait out its timeout (a review found this with the real
		// worker; this fake one reruns resubmissions).
		if (r.Outcome == producercli.OutcomeFailed || r.Outcome == producercli.OutcomeDeadLettered) && (r.Submitted || !r.Earlier) {
			t.Fatalf("line %d (%s) was submitted again (earlier %v)", r.Line, r.Outcome, r.Earlier)
		}
	}
	if seq := lastRequestSeq(ctx, t, tg.JS, tg.Cfg.RequestsStream); seq != seqAfterFirst {
		t.Fatalf("second run stored new requests: last seq %d, was %d", seq, seqAfterFirst)
	}
	runs := w.Runs()
	if len(runs) != 5 {
		t.Fatalf("worker ran %d invocations, want 5: %v", len(runs), runs)
	}
	for id, n := range runs {
		if n != 1 {
			t.Fatalf("invocation %s ran %d times", id, n)
		}
	}

	var buf bytes.Buffer
	producercli.WriteSummary(&buf, second)
	for _, s := range []string{"skipped (already completed)", "failed", "AUTH", "dead_lettered", "SERVER", "invalid", "total",
		"2 line(s) had ended dead_lettered or failed before this run", "dlq-replayer replay"} {
		if !strings.Contains(buf.String(), s) {
			t.Fatalf("summary lacks %q:\n%s", s, buf.String())
		}
	}
}

func TestRunBatchRateLimit(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clienttest.Start(t, tg.JS, tg.Cfg, clienttest.Echo)
	c, _ := client.New(tg.JS, tg.NC, producercli.ClientConfig(tg.Cfg))
	var sb strings.Builder
	for i := range 6 {
		sb.WriteString(`{"agent":"support","user_id":"u","session_id":"s` + string(rune('a'+i)) + `","text":"x"}` + "\n")
	}
	lines, _ := producercli.ParseBatch(strings.NewReader(sb.String()))
	start := time.Now()
	res, err := producercli.RunBatch(ctx, c, lines, producercli.BatchOptions{Concurrency: 6, Rate: 20, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Six submissions at 20/s with a burst of one take at least 250ms.
	if el := time.Since(start); el < 250*time.Millisecond {
		t.Fatalf("6 submissions at 20/s took %v", el)
	}
	if n := count(res)[producercli.OutcomeCompleted]; n != 6 {
		t.Fatalf("%d completed", n)
	}
}

func TestRunBatchTimeoutAndCancel(t *testing.T) {
	tg := streamstest.Embedded(t) // no worker: nothing completes
	c, _ := client.New(tg.JS, tg.NC, producercli.ClientConfig(tg.Cfg))
	lines, _ := producercli.ParseBatch(strings.NewReader(batchFile))
	res, err := producercli.RunBatch(context.Background(), c, lines[:2], producercli.BatchOptions{Concurrency: 2, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(res)[producercli.OutcomeTimeout]; n != 2 {
		t.Fatalf("outcomes %v, want 2 timeouts", count(res))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err = producercli.RunBatch(ctx, c, lines, producercli.BatchOptions{})
	if err == nil || count(res)[producercli.OutcomeCanceled] == 0 || len(res) != len(lines) {
		t.Fatalf("cancelled batch: %v %v", count(res), err)
	}
}

// TestCLI runs the command line against the embedded server: batch twice
// (exit codes, summary, plain progress lines), send --wait, await, timeout.
func TestCLI(t *testing.T) {
	tg := streamstest.Embedded(t)
	clienttest.Start(t, tg.JS, tg.Cfg, clienttest.Echo)
	url := tg.NC.ConnectedUrl()
	file := filepath.Join(t.TempDir(), "requests.jsonl")
	good := strings.Join(strings.Split(batchFile, "\n")[:3], "\n") + "\n"
	if err := os.WriteFile(file, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		env := producercli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		code := producercli.Run(context.Background(), append([]string{"--nats-url", url, "--timeout", "10s"}, args...), env)
		return code, out.String(), errb.String()
	}

	code, out, errs := run("batch", "--file", file, "--concurrency", "2", "--rate", "0")
	if code != producercli.ExitOK || !strings.Contains(out, "completed") || !strings.Contains(errs, "[3/3]") {
		t.Fatalf("first batch: code %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	streamstest.WaitDrained(ctx, t, tg) // the rerun must find every result stored
	code, out, _ = run("batch", "--file", file)
	if code != producercli.ExitOK || !strings.Contains(out, "skipped (already completed)  -      3") {
		t.Fatalf("second batch: code %d\n%s", code, out)
	}

	code, out, _ = run("send", "--agent", "support", "--user", "u", "--session", "s9", "--invocation", "cli-1", "hello", "there", "--wait")
	if code != producercli.ExitOK || out != "echo: hello there\n" {
		t.Fatalf("send --wait: %d %q", code, out)
	}
	code, out, _ = run("await", "cli-1")
	if code != producercli.ExitOK || out != "echo: hello there\n" {
		t.Fatalf("await: %d %q", code, out)
	}
	code, out, _ = run("send", "--agent", "support", "--user", "u", "--session", "s9", "--wait", "--json", "[dlq] me")
	if code != producercli.ExitNotCompleted || !strings.Contains(out, `"status": "dead_lettered"`) {
		t.Fatalf("send dead-lettered: %d %q", code, out)
	}
	code, _, _ = run("--timeout", "200ms", "await", "--timeout", "200ms", "never-sent")
	if code != producercli.ExitTimeout {
		t.Fatalf("await timeout: %d", code)
	}
	for _, args := range [][]string{{}, {"bogus"}, {"send", "--agent", "a"}, {"await"}, {"await", "a.b"}, {"batch"}, {"batch", "--file", file, "--concurrency", "0"},
		{"await", "--timeout", "0", "cli-1"}, {"--timeout", "0", "send", "--agent", "support", "--user", "u", "--session", "s", "hi"}, {"batch", "--file", file, "--timeout", "-1s"}} {
		if code, _, _ := run(args...); code != producercli.ExitUsage {
			t.Errorf("%v: exit %d, want usage", args, code)
		}
	}
	if code, _, _ := run("batch", "--file", filepath.Join(t.TempDir(), "missing.jsonl")); code != producercli.ExitError {
		t.Errorf("missing file: exit %d", code)
	}
}

func TestProgressBarOnTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := producercli.NewProgress(&buf, true)
	p.Start(2)
	p.Done(producercli.LineResult{Line: 1, InvocationID: "a", Outcome: producercli.OutcomeCompleted})
	p.Done(producercli.LineResult{Line: 2, InvocationID: "b", Outcome: producercli.OutcomeFailed, Class: "AUTH"})
	p.Finish()
	if !strings.Contains(buf.String(), "line 2 b failed AUTH") {
		t.Fatalf("bar output lacks the failure line: %q", buf.String())
	}
}

func equal(a, b map[producercli.Outcome]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A batch line whose request is within the body limit but too large for the
// server with its headers is "invalid" (Send refuses it before the publish),
// not an "error" that made the whole batch exit 1 as if NATS were down.
func TestRunBatchLineTooLargeWithItsHeadersIsInvalid(t *testing.T) {
	tg := streamstest.Embedded(t) // no worker: the line never gets that far
	// The default body limit leaves room under the default max_payload
	// (envelope.DefaultMaxSize): a client with a higher one, as a fleet
	// whose servers take less than its limit.
	ccfg := producercli.ClientConfig(tg.Cfg)
	ccfg.MaxRequestSize = 2 << 20
	c, _ := client.New(tg.JS, tg.NC, ccfg)
	line := func(n int) string {
		return `{"invocation_id":"big-1","agent":"support","user_id":"u1","session_id":"s1","text":"` + strings.Repeat("x", n) + `"}` + "\n"
	}
	// A request 16 bytes under the body limit (the encoded request, which
	// is not the line's own JSON).
	small, err := producercli.ParseBatch(strings.NewReader(line(1)))
	if err != nil || len(small) != 1 || small[0].Err != nil {
		t.Fatalf("test setup: ParseBatch = %+v, %v", small, err)
	}
	base, err := small[0].Request.Encode()
	if err != nil {
		t.Fatal(err)
	}
	big := *small[0].Request
	big.Message = model.NewTextContent(model.RoleUser, strings.Repeat("x", 1+int(tg.NC.MaxPayload())-16-len(base)))
	lines := []producercli.Line{{No: 1, Request: &big}}
	res, err := producercli.RunBatch(context.Background(), c, lines, producercli.BatchOptions{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Outcome != producercli.OutcomeInvalid {
		t.Fatalf("outcome %v (%v), want invalid", res[0].Outcome, res[0].Err)
	}
}
