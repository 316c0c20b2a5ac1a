package replayer

import (
	"fmt"
	"io"
	"sync"

	"github.com/schollz/progressbar/v3"
)

// progress reports a replay as it runs: a bar on a terminal, one plain line
// per entry otherwise. Notes (pauses, halts, problems) are printed above the
// bar. It is safe for concurrent use.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	bar   *progressbar.ProgressBar
	total int
	n     int
}

func newProgress(w io.Writer, terminal bool, total int, desc string) *progress {
	p := &progress{w: w, total: total}
	if terminal {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("entries"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

// done reports one entry handled.
func (p *progress) done(p2 Planned, what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if p.bar != nil {
		if p2.Action != ActionReplay || what != "replayed" {
			_ = p.bar.Clear()
			fmt.Fprintf(p.w, "seq %d %s %s: %s\n", p2.Item.Seq, p2.InvocationID(), p2.Class(), what)
		}
		_ = p.bar.Add(1)
		return
	}
	fmt.Fprintf(p.w, "[%d/%d] seq %d %s %s: %s\n", p.n, p.total, p2.Item.Seq, p2.InvocationID(), p2.Class(), what)
}

// handled returns how many entries were reported done.
func (p *progress) handled() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// note prints a line (above the bar).
func (p *progress) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
