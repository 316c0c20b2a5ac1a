package producercli

import (
	"fmt"
	"io"
	"sync/atomic"

	"github.com/schollz/progressbar/v3"
)

// Progress is told about a batch as it runs. Done calls are serialised.
type Progress interface {
	// Start is called once with the number of lines.
	Start(total int)
	// Done is called once per line.
	Done(r LineResult)
	// Finish is called once at the end.
	Finish()
}

// nopProgress reports nothing.
type nopProgress struct{}

func (nopProgress) Start(int)       {}
func (nopProgress) Done(LineResult) {}
func (nopProgress) Finish()         {}

// NewProgress returns a progress bar on w when terminal is set, else a
// Progress that writes one plain line per finished line.
func NewProgress(w io.Writer, terminal bool) Progress {
	if terminal {
		return &barProgress{w: w}
	}
	return &lineProgress{w: w}
}

// barProgress draws a progress bar (a terminal).
type barProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func (p *barProgress) Start(total int) {
	p.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription("batch"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("req"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
	)
}

func (p *barProgress) Done(r LineResult) {
	if !r.Outcome.ok() {
		// Print problems above the bar.
		_ = p.bar.Clear()
		fmt.Fprintln(p.w, lineText(r))
	}
	_ = p.bar.Add(1)
}

func (p *barProgress) Finish() { _ = p.bar.Finish() }

// lineProgress writes "[n/total] line L id outcome" lines (not a terminal).
type lineProgress struct {
	w     io.Writer
	total int
	n     atomic.Int64
}

func (p *lineProgress) Start(total int) { p.total = total }

func (p *lineProgress) Done(r LineResult) {
	n := p.n.Add(1)
	fmt.Fprintf(p.w, "[%d/%d] %s\n", n, p.total, lineText(r))
}

func (p *lineProgress) Finish() {}

// lineText describes one line's outcome.
func lineText(r LineResult) string {
	s := fmt.Sprintf("line %d %s %s", r.Line, orDash(r.InvocationID), r.Outcome)
	if r.Class != "" {
		s += " " + r.Class
	}
	if r.Duplicate {
		s += " (deduplicated by the server)"
	}
	if r.Err != nil {
		s += ": " + r.Err.Error()
	}
	return s
}
