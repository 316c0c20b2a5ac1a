package redisstore

import (
	"encoding/json"
	"testing"
)

func checkAppendMeta(t *testing.T, m meta) {
	t.Helper()
	want, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := appendMeta([]byte("prefix\n"), m)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "prefix\n"+string(want) {
		t.Errorf("appendMeta(%+v) = %q, want %q", m, got[len("prefix\n"):], want)
	}
}

func TestAppendMetaMatchesMarshal(t *testing.T) {
	for _, s := range []string{
		"", "inv-1", "support", "refund_order", "0123abcdef", "a b~c",
		`q"uote`, `back\slash`, "<tag>", "a&b", "new\nline", "tab\t", "\x00", "\x7f",
		"héllo", "\xff\xfe", "\u2028", "日本",
	} {
		checkAppendMeta(t, meta{Invocation: s, Agent: "support", Tool: "refund_order", ArgsHash: "ab12"})
		checkAppendMeta(t, meta{Invocation: "inv", Agent: s, Tool: s, ArgsHash: s})
	}
}

func FuzzAppendMeta(f *testing.F) {
	f.Add("inv-1", "support", "refund_order", "ab12")
	f.Add(`"`, "<", "\xff", "\n")
	f.Fuzz(func(t *testing.T, inv, agent, tool, hash string) {
		checkAppendMeta(t, meta{Invocation: inv, Agent: agent, Tool: tool, ArgsHash: hash})
	})
}
