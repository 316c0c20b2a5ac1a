package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// upper is an Editor that drops lines starting with "#" and upper-cases the
// others.
func upper(line []byte) []byte {
	if line == nil || bytes.HasPrefix(line, []byte("#")) {
		return nil
	}
	return bytes.ToUpper(line)
}

// TestReaderEditsWholeLines checks that every line reaches the editor whole
// and once, whatever the reads' sizes, the last line without a terminator
// included.
func TestReaderEditsWholeLines(t *testing.T) {
	const in = "a: 1\r\n# drop\n\nb" + "\n" + "#x\r\n" + "c: last"
	const want = "A: 1\r\n\nB\nC: LAST"
	for name, r := range map[string]io.Reader{
		"whole":    strings.NewReader(in),
		"one byte": iotest.OneByteReader(strings.NewReader(in)),
		"half":     iotest.HalfReader(strings.NewReader(in)),
	} {
		var lines []string
		ends := 0
		edit := func(line []byte) []byte {
			if line == nil {
				ends++
				return nil
			}
			lines = append(lines, string(line))
			return upper(line)
		}
		got, err := io.ReadAll(NewReader(io.NopCloser(r), edit))
		if err != nil || string(got) != want {
			t.Errorf("%s: read %q, %v; want %q", name, got, err, want)
		}
		if strings.Join(lines, "") != in || len(lines) != 6 || ends != 1 {
			t.Errorf("%s: editor saw %q and %d ends, want the 6 lines of %q and one end", name, lines, ends, in)
		}
	}
}

// TestReaderKeepsCutLine checks that a line still incomplete when the body
// fails is returned unedited, followed by the body's own error.
func TestReaderKeepsCutLine(t *testing.T) {
	errCut := errors.New("connection reset")
	body := io.MultiReader(strings.NewReader("# c\ndata: {\"a\": 1}\n\ndata: {\"b"), iotest.ErrReader(errCut))
	r := NewReader(io.NopCloser(body), upper)
	got, err := io.ReadAll(r)
	if err != errCut {
		t.Errorf("error %v, want the body's error as it was", err)
	}
	if want := "DATA: {\"A\": 1}\n\ndata: {\"b"; string(got) != want {
		t.Errorf("read %q, want %q", got, want)
	}
	if n, err := r.Read(make([]byte, 8)); n != 0 || err != errCut {
		t.Errorf("read after the error: %d, %v; want 0 and the error again", n, err)
	}
}

// TestReaderFlushesHeldLines checks that what an editor holds back comes
// out at the end of the stream, before a cut line.
func TestReaderFlushesHeldLines(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    io.Reader
		want    string
		wantErr error
	}{
		{"eof", strings.NewReader("a\nb\n"), "held: a\nheld: b\n", nil},
		{"cut", io.MultiReader(strings.NewReader("a\nb\nc"), iotest.ErrReader(io.ErrUnexpectedEOF)), "held: a\nheld: b\nc", io.ErrUnexpectedEOF},
	} {
		var held []byte
		hold := func(line []byte) []byte {
			if line == nil {
				return held
			}
			held = append(held, "held: "...)
			held = append(held, line...)
			return nil
		}
		got, err := io.ReadAll(NewReader(io.NopCloser(tc.body), hold))
		if string(got) != tc.want || err != tc.wantErr {
			t.Errorf("%s: read %q, %v; want %q, %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

// FuzzReaderIdentity checks that with an editor that keeps every line the
// reader returns the body as it is, whatever the reads' sizes.
func FuzzReaderIdentity(f *testing.F) {
	f.Add([]byte("data: {}\r\n\r\n: c\n"), uint8(1))
	f.Add([]byte("no newline"), uint8(3))
	f.Fuzz(func(t *testing.T, body []byte, step uint8) {
		var src io.Reader = bytes.NewReader(body)
		if step%2 == 1 {
			src = iotest.OneByteReader(src)
		}
		ends := 0
		keep := func(line []byte) []byte {
			if line == nil {
				ends++
			}
			return line
		}
		got, err := io.ReadAll(NewReader(io.NopCloser(src), keep))
		if err != nil || !bytes.Equal(got, body) || ends != 1 {
			t.Fatalf("read %q, %v, %d ends; want %q, nil, 1", got, err, ends, body)
		}
	})
}

// Regression (found in review of this session's fix, twenty-fifth
// session): a line without an end was held whole, however long, to be
// edited: a broken server's endless line grew the buffer without bound.
// Past maxLine the rest of the line is passed on unedited as it comes,
// and the lines after it are edited again.
func TestLongLinePassesUneditedAndBoundsTheBuffer(t *testing.T) {
	defer func(n int) { maxLine = n }(maxLine)
	maxLine = 10
	long := strings.Repeat("x", 50) + "\n"
	in := "a\n" + long + "# dropped\nb\n"
	r := NewReader(io.NopCloser(iotest.OneByteReader(strings.NewReader(in))), upper)
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	// The long line's first maxLine+1 bytes were held before it was found
	// too long; they and the rest come out unedited (not upper-cased).
	if want := "A\n" + long + "B\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	rd := NewReader(io.NopCloser(iotest.OneByteReader(strings.NewReader(strings.Repeat("y", 1000)))), upper).(*reader)
	buf := make([]byte, 1)
	for {
		if _, err := rd.Read(buf); err != nil {
			break
		}
		if len(rd.in) > maxLine+1 {
			t.Fatalf("held %d bytes of one line; want at most %d", len(rd.in), maxLine+1)
		}
	}
}
