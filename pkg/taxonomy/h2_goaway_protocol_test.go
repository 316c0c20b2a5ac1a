package taxonomy_test

import (
	"encoding/binary"
	"errors"
	"net/url"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, nineteenth session, of that session's own
// HTTP/2 classification): an HTTP/2 error the *peer* sends with
// PROTOCOL_ERROR was classified UNKNOWN (not retried, no degraded answer, dead-lettered "for review", never
// replayed automatically). Before that change the same failure of a request
// whose answer had not started came back inside a *url.Error and was
// TRANSPORT, as the seed taxonomy wants for any I/O failure (IOException ->
// TRANSPORT; an HTTP/2 reset or GOAWAY of any code is one in Java). A
// peer-sent PROTOCOL_ERROR is not proof of a bug on our side that a retry
// repeats: Google's front end (which serves Gemini) sheds load with
// "GOAWAY PROTOCOL_ERROR, debug data: client_throttled" (see
// googleapis/java-bigtable#1543), and intermittent "stream error: stream
// ID n; PROTOCOL_ERROR" from googleapis are well known and pass on retry.
// So a provider throttling this client is now filed UNKNOWN and the
// user is told the request failed, instead of being retried.
// Correct: an HTTP/2 error the peer sent (a GOAWAY, or an RST_STREAM
// "received from peer") on a request whose answer had not started is a
// transient transport failure (TRANSPORT; RATE_LIMITED would do too for
// client_throttled), as it was before; only a violation the client itself
// detected (a malformed frame it read) may stay UNKNOWN.
func TestHTTP2PeerGoAwayProtocolErrorBeforeAnswerIsNotUnknown(t *testing.T) {
	// GOAWAY: last stream 1 (ours, in flight), PROTOCOL_ERROR, the debug
	// data Google's front end sends when it throttles a client.
	p := binary.BigEndian.AppendUint32(nil, 1)
	p = binary.BigEndian.AppendUint32(p, h2ProtocolError)
	throttled := h2Frame{typ: h2FrameGoAway, payload: append(p, "client_throttled"...)}

	err := http2Failure(t, false, throttled)
	var urlErr *url.Error
	if !errors.As(err, &urlErr) {
		t.Fatalf("the request failed with %T (%v), not a *url.Error", err, err)
	}
	got := taxonomy.ClassifyError(err)
	t.Logf("error: %v; class %s", err, got)
	if got != taxonomy.Transport && got != taxonomy.RateLimited {
		t.Fatalf("a GOAWAY the provider's front end sent before answering (PROTOCOL_ERROR, client_throttled) is %s; "+
			"want TRANSPORT (or RATE_LIMITED), retried as it was before HTTP/2 errors were classed by code", got)
	}
}
