// Package sse edits a server-sent event stream line by line, between the
// HTTP response and a provider SDK's own stream reader, for what that
// reader gets wrong: the genai SDK fails on SSE comment lines and on fields
// other than "data" (the Gemini adapter drops them), and openai-go's reads
// a chunk with "error": null as an error event (the OpenAI adapter removes
// the null member). A line is edited whole, so an editor sees each line as
// the server sent it, whatever the reads' boundaries were.
package sse

import (
	"bytes"
	"errors"
	"io"
	"slices"
)

// Editor returns what replaces line, one line of the stream with its
// terminator ("\n" or "\r\n"; the last line of a stream that ends without
// one has none): line itself to keep it, nil to drop it. It may keep state
// across the lines of one stream, and hold lines back to return them later
// (an event's lines until its end); at the end of the stream it is called
// once more with a nil line, to return what it still holds. What it
// returns is copied before the next call.
type Editor func(line []byte) []byte

// minRead is the least room NewReader's reader offers the body's Read.
const minRead = 4 << 10

// maxLine is the longest line NewReader holds to edit whole: the rest of a
// longer one is passed on unedited as it comes, so a line without an end
// (a broken server) costs no more memory than this. It is above the
// longest line the SDKs' own readers take (genai's 256 MiB, openai-go's 32
// MiB), so every line they would read is edited (found in review of this
// session's fix, twenty-fifth session: at 16 MiB a chunk carrying a large
// image passed unedited and the Gemini filter dropped the blank line that
// ends its event), and one passed on raw is refused by them as it would
// be without the editor.
var maxLine = 257 << 20

// NewReader returns rc's bytes with every line replaced by what edit returns
// for it. The last line of a stream that ends (io.EOF) without a terminator
// is edited too; a line still incomplete when reading rc fails otherwise (a
// stream broken off) is returned as it was, unedited, after what edit(nil)
// returns, and then the error, as rc returned it: the consumer sees the
// bytes the stream broke off in and the same error as without the reader.
// Close closes rc.
func NewReader(rc io.ReadCloser, edit Editor) io.ReadCloser {
	return &reader{rc: rc, edit: edit}
}

// reader is NewReader's ReadCloser.
type reader struct {
	rc   io.ReadCloser
	edit Editor
	in   []byte // read from rc, no whole line
	raw  bool   // passing on the rest of a line longer than maxLine
	out  []byte // edited, not yet returned from out[off:]
	off  int
	err  error // rc's error, returned once out is drained
}

// Read implements io.Reader.
func (r *reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for r.off == len(r.out) {
		if r.err != nil {
			return 0, r.err
		}
		r.out, r.off = r.out[:0], 0
		r.fill()
	}
	n := copy(p, r.out[r.off:])
	r.off += n
	return n, nil
}

// fill reads once from rc and edits the lines that completed.
func (r *reader) fill() {
	r.in = slices.Grow(r.in, minRead)
	scanned := len(r.in) // r.in holds no '\n'
	n, err := r.rc.Read(r.in[len(r.in):cap(r.in)])
	r.in = r.in[:len(r.in)+n]
	start := 0
	if r.raw {
		// r.in held nothing before this read: the line goes on as it
		// comes up to its end.
		i := bytes.IndexByte(r.in, '\n')
		if i < 0 {
			i = len(r.in) - 1
		} else {
			r.raw = false
		}
		r.out = append(r.out, r.in[:i+1]...)
		start, scanned = i+1, i+1
	}
	for {
		i := bytes.IndexByte(r.in[scanned:], '\n')
		if i < 0 {
			break
		}
		end := scanned + i + 1
		r.out = append(r.out, r.edit(r.in[start:end])...)
		start, scanned = end, end
	}
	r.in = r.in[:copy(r.in, r.in[start:])]
	if err == nil {
		if len(r.in) > maxLine {
			r.out = append(r.out, r.in...)
			r.in, r.raw = r.in[:0], true
		}
		return
	}
	eof := errors.Is(err, io.EOF)
	if eof && len(r.in) > 0 {
		r.out = append(r.out, r.edit(r.in)...)
	}
	r.out = append(r.out, r.edit(nil)...)
	if !eof {
		r.out = append(r.out, r.in...)
	}
	r.in = r.in[:0]
	r.err = err
}

// Close implements io.Closer: it closes the body.
func (r *reader) Close() error { return r.rc.Close() }
