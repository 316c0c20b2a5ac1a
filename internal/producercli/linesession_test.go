package producercli

import (
	"bytes"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// lineSession reads the names as encoding/json decodes them, from a line
// it reads once, keeping one member at a time.
func TestLineSession(t *testing.T) {
	want := sessionKey{agent: "a", user: "u", session: "s"}
	long := strings.Repeat("x", 4*maxMemberJSON)
	for _, c := range []struct {
		name, line string
		want       sessionKey
	}{
		{"plain", `{"agent":"a","user_id":"u","session_id":"s","text":"x"}`, want},
		{"white space", " {\t\"agent\" : \"a\" ,\n\"user_id\":\"u\",\"session_id\":\"s\" } ", want},
		{"other case", `{"Agent":"a","USER_ID":"u","Session_Id":"s"}`, want},
		{"given twice: the last", `{"agent":"b","agent":"a","user_id":"u","session_id":"s"}`, want},
		{"escaped", `{"\u0061gent":"a","user_id":"\u0075","session_id":"\u00e9\ud83d\ude00"}`,
			sessionKey{agent: "a", user: "u", session: "é😀"}},
		{"values skipped", `{"message":{"role":"user","parts":[{"text":"hi \"}]\\"}]},"metadata":{"k":[0,-2.5e+3,1E2,true,null,false,{},[]]},` +
			`"agent":"a","user_id":"u","session_id":"s"}`, want},
		{"a long other value", `{"text":"` + long + `","agent":"a","user_id":"u","session_id":"s"}`, want},
		{"a long key", `{"` + long + `":1,"agent":"a","user_id":"u","session_id":"s"}`, want},
		{"another type: ignored", `{"agent":"a","agent":5,"user_id":"u","session_id":"s"}`, want},
		{"text after the object", `{"agent":"a","user_id":"u","session_id":"s"} {"x":1}`, want},
		{"a name not UTF-8", "{\"agent\":\"a\",\"user_id\":\"u\",\"session_id\":\"s\xe9\"}", sessionKey{}},
		{"a name not UTF-8, then another", "{\"session_id\":\"s\xe9\",\"agent\":\"a\",\"user_id\":\"u\",\"session_id\":\"s\"}", want},
		{"text not UTF-8", "{\"agent\":\"a\",\"user_id\":\"u\",\"session_id\":\"s\",\"text\":\"caf\xe9\"}", want},
		{"a name too long to keep", `{"agent":"a","user_id":"u","session_id":"` + long + `"}`, sessionKey{}},
		{"a name missing", `{"agent":"a","user_id":"u","text":"x"}`, sessionKey{}},
		{"a name of another type", `{"agent":"a","user_id":"u","session_id":7}`, sessionKey{}},
		{"a name holding NUL", `{"agent":"a","user_id":"u","session_id":"s\u0000"}`, sessionKey{}},
		{"not closed", `{"agent":"a","user_id":"u","session_id":"s"`, sessionKey{}},
		{"not closed in a value", `{"agent":"a","user_id":"u","session_id":"s","m":[1,2`, sessionKey{}},
		{"bad value", `{"agent":"a","user_id":"u","session_id":"s","m":[1,]}`, sessionKey{}},
		{"bad number", `{"agent":"a","user_id":"u","session_id":"s","n":01}`, sessionKey{}},
		{"bad literal", `{"agent":"a","user_id":"u","session_id":"s","n":truex}`, sessionKey{}},
		{"bad escape", `{"agent":"a","user_id":"u","session_id":"s","t":"\x"}`, sessionKey{}},
		{"control byte in a string", "{\"agent\":\"a\",\"user_id\":\"u\",\"session_id\":\"s\",\"t\":\"a\tb\"}", sessionKey{}},
		{"missing colon", `{"agent":"a","user_id":"u","session_id" "s"}`, sessionKey{}},
		{"an array", `[{"agent":"a","user_id":"u","session_id":"s"}]`, sessionKey{}},
		{"empty object", `{}`, sessionKey{}},
		{"a comment", `# {"agent":"a","user_id":"u","session_id":"s"}`, sessionKey{}},
		{"nested too deep", `{"agent":"a","user_id":"u","session_id":"s","m":` + strings.Repeat("[", 2*maxSkimDepth) +
			strings.Repeat("]", 2*maxSkimDepth) + `}`, sessionKey{}},
	} {
		if got := lineSession(bytes.NewReader([]byte(c.line))); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		// Where the line is JSON, as parseLine's decode would name it.
		var n lineNames
		// (A name not UTF-8, or holding NUL, is unknown on purpose.)
		if json.Valid([]byte(c.line)) && utf8.ValidString(c.line) && !strings.Contains(c.line, `\u0000`) && json.Unmarshal([]byte(c.line), &n) == nil && n.Agent != "" &&
			n.UserID != "" && n.SessionID != "" && len(c.line) < maxMemberJSON &&
			(sessionKey{agent: n.Agent, user: n.UserID, session: n.SessionID}) != c.want {
			t.Errorf("%s: encoding/json reads %+v", c.name, n)
		}
	}
}

// genLine is a reader of one batch line of n bytes of text, then its
// names, then a newline, and a second, short line: generated, never held.
type genLine struct {
	head, tail []byte
	n          int
}

func (g *genLine) Read(p []byte) (int, error) {
	switch {
	case len(g.head) > 0:
		k := copy(p, g.head)
		g.head = g.head[k:]
		return k, nil
	case g.n > 0:
		k := min(len(p), g.n)
		for i := range k {
			p[i] = 'x'
		}
		g.n -= k
		return k, nil
	case len(g.tail) > 0:
		k := copy(p, g.tail)
		g.tail = g.tail[k:]
		return k, nil
	}
	return 0, io.EOF
}

// A line many times longer than maxLineSize, naming its session after its
// text, is read in memory that does not grow with its length, and its
// session is found.
func TestParseBatchOverlongLineSessionBoundedMemory(t *testing.T) {
	parse := func(size int) uint64 {
		r := &genLine{head: []byte(`{"text":"`), n: size,
			tail: []byte(`","agent":"support","user_id":"u1","session_id":"s1"}` + "\n" +
				`{"agent":"support","user_id":"u1","session_id":"s1","text":"turn 2"}` + "\n")}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		lines, err := ParseBatch(r)
		runtime.ReadMemStats(&after)
		if err != nil || len(lines) != 2 || lines[0].Err == nil || lines[1].Err != nil {
			t.Fatalf("%d lines, %v", len(lines), err)
		}
		if want := (sessionKey{agent: "support", user: "u1", session: "s1"}); lines[0].session != want {
			t.Errorf("the %d-byte line names %+v, want %+v", size, lines[0].session, want)
		}
		if lines[1].No != 2 {
			t.Errorf("the next line is numbered %d, want 2", lines[1].No)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	short, long := parse(2*maxLineSize), parse(8*maxLineSize)
	t.Logf("allocated %d bytes for a line of %d bytes, %d for one of %d", short, 2*maxLineSize, long, 8*maxLineSize)
	if long > short+maxLineSize/4 {
		t.Errorf("reading a line of %d bytes allocated %d bytes, one of %d bytes %d", 2*maxLineSize, short, 8*maxLineSize, long)
	}
}

// On a line that is one JSON object of valid UTF-8, lineSession names what
// encoding/json decodes (when it decodes all three names, at most 256
// bytes each and without NUL); on any line it returns.
func FuzzLineSession(f *testing.F) {
	for _, s := range []string{
		`{"agent":"a","user_id":"u","session_id":"s","text":"x"}`,
		`{"Agent":"a","agent":"b","USER_ID":"\u0075","session_id":"s","message":{"parts":[{"text":"t"}]},"n":[1,-2.5e3,true,null]}`,
		`{"agent":5,"user_id":"u","session_id":"s"}`,
		"{\"agent\":\"a\",\"user_id\":\"u\",\"session_id\":\"s\xe9\"}",
		`[1,2]`, `{"a":`, `{"agent":"a"} x`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		got := lineSession(bytes.NewReader([]byte(line)))
		var n lineNames
		if !json.Valid([]byte(line)) || !utf8.ValidString(line) || json.Unmarshal([]byte(line), &n) != nil {
			return
		}
		want := sessionKey{agent: n.Agent, user: n.UserID, session: n.SessionID}
		for _, name := range []string{n.Agent, n.UserID, n.SessionID} {
			if name == "" || len(name) > 256 || strings.ContainsRune(name, 0) {
				want = sessionKey{}
			}
		}
		if want != (sessionKey{}) && got != want {
			t.Errorf("%q: lineSession %+v, encoding/json %+v", line, got, want)
		}
		if (n.Agent == "" || n.UserID == "" || n.SessionID == "") && got != (sessionKey{}) {
			t.Errorf("%q: lineSession %+v, encoding/json names not all three", line, got)
		}
	})
}
