package replayer

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// parkedIDs lists the parked stream's entries as "<class>/<agent>/<invocation or bad>".
func (x *fx) parkedKeys() []string {
	x.t.Helper()
	r := dlq.NewReader(x.js, dlq.Config{Stream: x.cfg.Replay.ParkedStream, Prefix: x.cfg.Replay.ParkedPrefix})
	var out []string
	for it, err := range r.List(context.Background(), dlq.Filter{}) {
		if it == nil {
			if err != nil {
				x.t.Fatal(err)
			}
			break
		}
		class, agent := subjectTokens(it.Subject)
		id := "bad"
		if it.Entry != nil {
			id = it.Entry.InvocationID
		}
		out = append(out, class+"/"+agent+"/"+id)
	}
	sort.Strings(out)
	return out
}

func planKeys(t *testing.T, stdout string) []string {
	t.Helper()
	var plan []PlannedJSON
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatalf("dry run --json printed no plan (%v):\n%s", err, stdout)
	}
	var out []string
	for _, p := range plan {
		out = append(out, p.Class+"/"+p.Agent+"/"+p.InvocationID)
	}
	sort.Strings(out)
	return out
}

// Filters select the right parked entries, bad ones by their subject's
// class and agent, --invocation by the entry or the bad entry's header.
func TestPurgeParkedFilters(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("srv", 2, "SERVER", 0)
	x.seed("unk", 1, "UNKNOWN", 0)
	// A bad entry of class TIMEOUT, agent billing, with an invocation header.
	msg := &nats.Msg{Subject: x.sc.DLQSubject("TIMEOUT", "billing"), Data: []byte("not json"), Header: nats.Header{}}
	msg.Header.Set(dlq.HeaderInvocationID, "badinv")
	if _, err := x.js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	x.run(ctx, nil, "park", "--all", "--yes").must(t, ExitUsage, "park --all is no flag") // park has no --all
	for _, c := range []string{"SERVER", "UNKNOWN", "TIMEOUT"} {
		x.run(ctx, nil, "park", "--class", c, "--yes").must(t, ExitOK, "park "+c)
	}
	x.seed("dlq", 2, "TIMEOUT", 0) // stays in the DLQ
	if got := x.parkedKeys(); len(got) != 4 {
		t.Fatalf("premise: parked %v", got)
	}
	t.Logf("parked: %v", x.parkedKeys())

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--class", "SERVER"}, []string{"SERVER/support/srv-0", "SERVER/support/srv-1"}},
		{[]string{"--class", "timeout"}, []string{"TIMEOUT/billing/badinv"}},
		{[]string{"--agent", "billing"}, []string{"TIMEOUT/billing/badinv"}},
		{[]string{"--agent", "support"}, []string{"SERVER/support/srv-0", "SERVER/support/srv-1", "UNKNOWN/support/unk-0"}},
		{[]string{"--invocation", "badinv"}, []string{"TIMEOUT/billing/badinv"}},
		{[]string{"--invocation", "unk-0"}, []string{"UNKNOWN/support/unk-0"}},
		// One of the two: park may store them in either order.
		{[]string{"--class", "SERVER", "--max", "1"}, []string{"SERVER/support/srv-0", "SERVER/support/srv-1"}},
		{[]string{"--since", "1h"}, []string{"SERVER/support/srv-0", "SERVER/support/srv-1", "TIMEOUT/billing/badinv", "UNKNOWN/support/unk-0"}},
		{[]string{"--until", "1h"}, nil},
		{[]string{}, []string{"SERVER/support/srv-0", "SERVER/support/srv-1", "TIMEOUT/billing/badinv", "UNKNOWN/support/unk-0"}},
	} {
		args := append([]string{"purge", "--parked", "--dry-run", "--json"}, tc.args...)
		out := x.run(ctx, nil, args...).must(t, ExitOK, strings.Join(args, " "))
		got := planKeys(t, out.stdout)
		if slices.Contains(tc.args, "--max") {
			if len(got) != 1 || !slices.Contains(tc.want, got[0]) {
				t.Errorf("%s: selected %v, want one of %v", strings.Join(args, " "), got, tc.want)
			}
			continue
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: selected %v, want %v", strings.Join(args, " "), got, tc.want)
		}
	}

	// Refused without a filter, like purge.
	out := x.run(ctx, nil, "purge", "--parked", "--yes")
	if out.code != ExitUsage || !strings.Contains(out.stderr, "purge needs a filter") {
		t.Errorf("purge --parked --yes: exit %d, stderr %q; want a usage error", out.code, out.stderr)
	}
	x.run(ctx, nil, "purge", "--parked", "--all", "--class", "SERVER", "--yes").must(t, ExitUsage, "--all with a filter")
	if got := x.parkedKeys(); len(got) != 4 {
		t.Fatalf("a refused purge deleted parked entries: %v", got)
	}

	// Not a terminal, no --yes: refused, nothing deleted.
	out = x.run(ctx, nil, "purge", "--parked", "--class", "SERVER")
	if out.code == ExitOK || len(x.parkedKeys()) != 4 {
		t.Errorf("purge --parked without --yes off a terminal: exit %d, %d parked left; stderr %s", out.code, len(x.parkedKeys()), out.stderr)
	}
	t.Logf("no --yes: exit %d: %s", out.code, out.stderr)

	// Delete the bad one by invocation, JSON output.
	out = x.run(ctx, nil, "purge", "--parked", "--invocation", "badinv", "--yes", "--json").must(t, ExitOK, "purge bad")
	var got map[string]int
	if err := json.Unmarshal([]byte(out.stdout), &got); err != nil || got["purged"] != 1 || got["already_gone"] != 0 {
		t.Errorf("purge --parked --json = %q (%v), want purged 1", out.stdout, err)
	}
	if k := x.parkedKeys(); strings.Join(k, ",") != "SERVER/support/srv-0,SERVER/support/srv-1,UNKNOWN/support/unk-0" {
		t.Errorf("after purging the bad entry: %v", k)
	}
	if n := len(x.dlqIDs()); n != 2 {
		t.Errorf("DLQ changed: %d entries, want 2", n)
	}
	// --all.
	x.run(ctx, nil, "purge", "--parked", "--all", "--yes").must(t, ExitOK, "purge --parked --all")
	if k := x.parkedKeys(); len(k) != 0 {
		t.Errorf("after --all: %v", k)
	}
	if n := len(x.dlqIDs()); n != 2 {
		t.Errorf("DLQ changed: %d entries, want 2", n)
	}
}

// The confirmation prompt on a terminal: an entry deleted while the prompt
// waits is counted as already gone.
func TestPurgeParkedPromptAndAlreadyGone(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("srv", 3, "SERVER", 0)
	x.run(ctx, nil, "park", "--class", "SERVER", "--yes").must(t, ExitOK, "park")
	pr, pw := io.Pipe()
	var out, errb syncBuf
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"purge", "--parked", "--class", "SERVER"}, Env{Stdout: &out, Stderr: &errb, Stdin: pr,
			Lookup: x.lookup(nil), Terminal: func(s any) bool { return s == pr }})
	}()
	eventually(t, "the prompt", 10*time.Second, func() bool { return strings.Contains(errb.String(), "Type yes") })
	t.Logf("prompt: %s", errb.String())
	s, err := x.js.Stream(ctx, x.cfg.Replay.ParkedStream)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := s.Info(ctx)
	if err := s.DeleteMsg(ctx, info.State.FirstSeq); err != nil {
		t.Fatal(err)
	}
	if _, err := pw.Write([]byte("yes\n")); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "purged 2 entries (1 were already gone)") {
		t.Errorf("stdout %q", out.String())
	}
	if st := x.streamState(x.cfg.Replay.ParkedStream); st.Msgs != 0 {
		t.Errorf("%d parked left", st.Msgs)
	}
}

// Nothing parked: dry run, --json, exit codes.
func TestPurgeParkedNothingParkedOutputs(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("dlq", 2, "SERVER", 0)
	dry := x.run(ctx, nil, "purge", "--parked", "--dry-run", "--json").must(t, ExitOK, "dry json")
	if strings.TrimSpace(dry.stdout) != "[]" {
		t.Errorf("purge --parked --dry-run --json with nothing parked: %q, want []", dry.stdout)
	}
	dry = x.run(ctx, nil, "purge", "--parked", "--class", "SERVER", "--dry-run").must(t, ExitOK, "dry")
	contains(t, dry.stdout, "would delete 0 entries")
	contains(t, dry.stderr, "nothing is parked")
	js := x.run(ctx, nil, "purge", "--parked", "--class", "SERVER", "--yes", "--json").must(t, ExitOK, "json")
	var got map[string]int
	if err := json.Unmarshal([]byte(js.stdout), &got); err != nil || got["purged"] != 0 {
		t.Errorf("purge --parked --json with nothing parked: %q (%v)", js.stdout, err)
	}
	x.run(ctx, nil, "purge", "--parked", "--yes").must(t, ExitUsage, "no filter, nothing parked")
	if n := len(x.dlqIDs()); n != 2 {
		t.Errorf("DLQ changed: %d", n)
	}
	if _, err := x.js.Stream(ctx, x.cfg.Replay.ParkedStream); err == nil {
		t.Error("the parked stream was created")
	}
}

// A parked stream with three replicas on a three-node cluster.
func TestPurgeParkedOnACluster(t *testing.T) {
	js, servers := natstest.ClusterJetStream(t, 3)
	nc := js.Conn()
	var x *fx
	natstest.Retry(t, time.Minute, func(ctx context.Context) error {
		_, err := js.AccountInfo(ctx)
		return err
	})
	x = newFxOn(t, false, js, nc, servers[0].ClientURL())
	ctx := ctxT(t)
	// The team's parked stream: R3.
	team := &Parked{js: js, cfg: ParkedConfig{Stream: x.cfg.Replay.ParkedStream, Prefix: x.cfg.Replay.ParkedPrefix, MaxAge: 14 * day, Replicas: 3}}
	natstest.Retry(t, time.Minute, team.Ensure)
	x.seed("srv", 3, "SERVER", 0)
	x.putBad(ctx)
	x.run(ctx, nil, "park", "--class", "SERVER", "--yes").must(t, ExitOK, "park")
	s, err := js.Stream(ctx, x.cfg.Replay.ParkedStream)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.CachedInfo().Config.Replicas; r != 3 {
		t.Fatalf("premise: %d replicas", r)
	}
	out := x.run(ctx, nil, "purge", "--parked", "--class", "SERVER", "--yes").must(t, ExitOK, "purge --parked on a cluster")
	contains(t, out.stdout, "purged 5 entries (0 were already gone)")
	if st := x.streamState(x.cfg.Replay.ParkedStream); st.Msgs != 0 {
		t.Errorf("%d parked left", st.Msgs)
	}
	// An entry gone between the plan and the delete, on the R3 stream:
	// Delete fails and Get says not found (purge counts it already gone).
	r := team.Reader()
	derr := r.Delete(ctx, 1)
	_, gerr := r.Get(ctx, 1)
	if derr == nil || !isNotFound(gerr) {
		t.Errorf("on a cluster, a gone entry: delete %v, get %v (isNotFound %v)", derr, gerr, isNotFound(gerr))
	}
	_ = jetstream.StreamConfig{}
}
