package producercli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, twenty-fifth session): `producer send
// --metadata priority=high ... --metadata priority=low` published
// priority=low and exited 0: kvFlag.Set overwrote a key given twice
// without a word, so a script that appends a default after the caller's
// value (or a copy-paste) sent something other than it was asked. The same
// request as a batch line is refused (envelope.CheckJSON: a member given
// twice), and the replayer refuses a repeated flag. Now a --metadata key
// given twice is a usage error (exit 2) naming the key and both values,
// and nothing is published.
func TestSendRefusesAMetadataKeyGivenTwice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := newBadInputFleet(t, ctx, time.Minute, nil) // streams, no worker
	var out, errb bytes.Buffer
	env := producercli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := producercli.Run(ctx, []string{"--nats-url", f.srv.ClientURL(),
		"send", "--agent", "support", "--user", "u1", "--session", "s1",
		"--metadata", "priority=high", "--metadata", "priority=low", "refund order A-1"}, env)
	sent := "nothing"
	if s, err := f.js.Stream(ctx, f.sc.RequestsStream); err == nil {
		if m, err := s.GetLastMsgForSubject(ctx, f.sc.RequestPrefix+".support"); err == nil {
			sent = "a request"
			if req, err := envelope.DecodeRequest(m.Data, 0); err == nil {
				sent = "metadata " + req.Metadata["priority"]
			}
		}
	}
	if code != producercli.ExitUsage || sent != "nothing" {
		t.Errorf("send with --metadata priority given twice: exit %d, published %s, stderr %q; "+
			"want exit %d (usage: the key is given twice) and nothing published",
			code, sent, errb.String(), producercli.ExitUsage)
	}
	for _, want := range []string{`"priority" given twice`, `"high"`, `"low"`} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr does not say %s:\n%s", want, errb.String())
		}
	}
}
