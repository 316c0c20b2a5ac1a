package dlq_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Regression (found in review, twenty-first session): the stored reason
// keeps no host name of a certificate error. Entry.Reason: "the Publisher sanitises it (tool.SanitizeString: one
// line, no hosts, URLs or stack frames)". A provider endpoint behind a
// certificate that does not match is AUTH (README: it pages and is
// dead-lettered for replay after the fix), and Go's error for it names the
// hosts without a port or URL around them: crypto/x509's HostnameError
// "x509: certificate is valid for <names>, not <host>". Those names reach
// the stored entry (and `dlq-replayer show`, the invocation record, the
// PAGE log line) as they are.
func TestReasonKeepsNoHostNames(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := dlq.NewPublisher(tg.JS, dlqConfig(tg))
	r := dlq.NewReader(tg.JS, dlqConfig(tg))

	for i, tc := range []struct{ reason, host string }{
		{`model: Post "https://llm-gw.prod.acme-corp.net/v1/chat": tls: failed to verify certificate: x509: certificate is valid for ingress.acme-edge.net, llm-gw-old.acme-corp.net, not llm-gw.prod.acme-corp.net`, "acme-corp.net"},
		{`tls: failed to verify certificate: x509: certificate is valid for ingress.acme-edge.net, not llm-gw.prod.acme-corp.net`, "acme-edge.net"},
	} {
		e := sampleEntry()
		e.InvocationID = "inv-host-" + string(rune('a'+i))
		e.Class = "AUTH"
		e.Reason = tc.reason
		ack, err := p.Publish(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		it, err := r.Get(ctx, ack.Sequence)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(it.Entry.Reason, tc.host) {
			t.Errorf("stored reason names a host (%s): %q", tc.host, it.Entry.Reason)
		}
	}
}
