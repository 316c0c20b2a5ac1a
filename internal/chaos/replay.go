package chaos

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/agentfleet/internal/childproc"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// latestEntries reads the DLQ and returns, per invocation id, its newest
// entry (highest stream sequence) and all its entries.
func (h *Harness) latestEntries(ctx context.Context) (latest map[string]*dlq.Item, all map[string][]*dlq.Item, bad []*dlq.Item, err error) {
	r := dlq.NewReader(h.js, dlq.Config{})
	latest, all = map[string]*dlq.Item{}, map[string][]*dlq.Item{}
	for it, err := range r.List(ctx, dlq.Filter{}) {
		if it == nil {
			return nil, nil, nil, fmt.Errorf("chaos: read the DLQ: %w", err)
		}
		if it.Err != nil {
			bad = append(bad, it)
			continue
		}
		id := it.Entry.InvocationID
		all[id] = append(all[id], it)
		if cur, ok := latest[id]; !ok || it.Seq > cur.Seq {
			latest[id] = it
		}
	}
	return latest, all, bad, nil
}

// replay replays the DLQ with the workers running without faults: `dlq-
// replayer replay`, then waits until every
// invocation whose newest entry is transient has completed, or deadline.
func (h *Harness) replay(ctx context.Context, cl *client.Client, rep *Report, deadline time.Time) error {
	latest, all, _, err := h.latestEntries(ctx)
	if err != nil {
		return err
	}
	rep.beforeReplay = all // the replayer may delete what it replayed
	var want []string
	for id, it := range latest {
		if !it.Entry.Retryable && !taxonomy.PolicyFor(taxonomy.Class(it.Entry.Class)).AutoReplay {
			continue // by the class too: the flag is the worker's, under test
		}
		if res, err := cl.Lookup(ctx, id); err == nil && res.Status == envelope.StatusCompleted {
			continue
		}
		want = append(want, id)
	}
	rep.ReplayWanted = len(want)
	h.logf("DLQ: %d invocations with entries, %d of them wait for a replay (transient, not completed)", len(latest), len(want))

	mode := h.cfg.Replay
	if mode == ReplayAuto {
		mode = ReplayBinary
	}
	switch mode {
	case ReplayBinary:
		rep.ReplayMode = "dlq-replayer replay"
		code, err := h.runReplayer(ctx, deadline)
		rep.ReplayerExit = code
		if err != nil {
			rep.addHarnessError(err.Error())
			h.logf("%v", err)
		}
	}

	// Wait for the replayed invocations to complete.
	left := want
	for len(left) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		var next []string
		for _, id := range left {
			lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			res, err := cl.Lookup(lctx, id)
			cancel()
			if err != nil || res.Status != envelope.StatusCompleted {
				next = append(next, id)
			}
		}
		if len(next) != len(left) || len(next) == 0 {
			h.logf("replay: %d of %d completed", len(want)-len(next), len(want))
		}
		left = next
		h.noteCrashes(rep) // the workers run the replays: one that dies is a violation here too
		if len(left) > 0 {
			sleepCtx(ctx, time.Second)
		}
	}
	h.noteCrashes(rep)
	return nil
}

// runReplayer runs `dlq-replayer replay --nats-url URL --redis-url URL
// --yes` (plus ReplayerArgs) until it exits or deadline, its output in
// logs/dlq-replayer.log; the end of that output is echoed.
func (h *Harness) runReplayer(ctx context.Context, deadline time.Time) (int, error) {
	args := append([]string{"replay", "--nats-url", h.natsURL, "--redis-url", h.redisURL, "--yes"}, h.cfg.ReplayerArgs...)
	h.logf("running dlq-replayer %s", strings.Join(args, " "))
	p, err := h.ps.Start(h.logDir, "dlq-replayer", h.replayerBin, args, childproc.Env(h.cfg.ReplayerEnv...))
	if err != nil {
		return -1, err
	}
	select {
	case <-p.Done():
	case <-time.After(time.Until(deadline)):
		p.Stop(syscall.SIGKILL, 0)
		return -1, fmt.Errorf("dlq-replayer still running at the replay deadline; killed (log %s)", p.LogPath)
	case <-ctx.Done():
		p.Stop(syscall.SIGKILL, 0)
		return -1, ctx.Err()
	}
	h.echoTail(p.LogPath, 30)
	code := p.State().ExitCode()
	if code != 0 {
		return code, fmt.Errorf("dlq-replayer exited with %d (2: halted by a safety rule; log %s)", code, p.LogPath)
	}
	return 0, nil
}

// echoTail prints the last n lines of a log file.
func (h *Harness) echoTail(path string, n int) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	for _, l := range lines {
		fmt.Fprintf(h.cfg.Out, "    | %s\n", l)
	}
}
