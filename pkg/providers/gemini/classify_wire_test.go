package gemini

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// cancelled499 is the body the Gemini API answers, under heavy load, for a
// request the client did NOT cancel (google-gemini/gemini-cli#20309): HTTP
// 499 with the canonical status CANCELLED and reason backendError.
const cancelled499 = `{"error": {"code": 499, "message": "The operation was cancelled.",
  "errors": [{"message": "The operation was cancelled.", "domain": "global", "reason": "backendError"}],
  "status": "CANCELLED"}}`

// A provider-side 499 CANCELLED, while the caller's context is live, is a
// transient backend failure (SERVER): the retry decorator's second attempt
// succeeds. (The taxonomy mapped 499 to UNKNOWN, so the decorator never
// retried it, OnModelError did not degrade, and the worker dead-lettered it
// for manual review with no automatic replay.)
func TestProvider499CancelledIsRetried(t *testing.T) {
	var n atomic.Int32
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			jsonHandler(499, cancelled499)(w, r)
			return
		}
		jsonHandler(200, textOK)(w, r)
	})
	m := newTestModel(t, f)
	chain, err := retry.New(m, retry.Config{DisableBudget: true},
		retry.WithSleep(func(ctx context.Context, d time.Duration) error { return ctx.Err() }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	resps, errs := collect(ctx, chain, userText("hi"), false)
	if ctx.Err() != nil {
		t.Fatalf("caller context ended: %v", ctx.Err())
	}
	if len(errs) != 0 || len(resps) != 1 {
		var class taxonomy.Class
		if len(errs) > 0 {
			class = taxonomy.ClassifyError(errs[0])
		}
		t.Fatalf("provider requests = %d, responses %d, errors %v (class %s, retryable %v); want the 499 retried once and the answer",
			f.count(), len(resps), errs, class, taxonomy.PolicyFor(class).Retryable)
	}
}

// keyInvalid400 is the Gemini API's answer to an invalid, deleted or expired
// API key: HTTP 400 INVALID_ARGUMENT, with the structured
// google.rpc.ErrorInfo reason API_KEY_INVALID saying it is the credential.
const keyInvalid400 = `{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
  "status": "INVALID_ARGUMENT",
  "details": [
    {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
     "metadata": {"service": "generativelanguage.googleapis.com"}},
    {"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US", "message": "API key not valid. Please pass a valid API key."}
  ]}}`

// A revoked or wrong Gemini key is AUTH ("a missing, revoked or
// unauthorised credential"), the label that tells the responder to look at
// the key. Gemini reports it with HTTP 400 and ErrorInfo.reason
// API_KEY_INVALID (structured, not message text), and it is AUTH. (The
// classifier read only the status and filed it BAD_REQUEST, sending the page
// and the dead letters, agent.dlq.BAD_REQUEST.*, to whoever owns request
// building.)
func TestGeminiRefusedKeyIsAuth(t *testing.T) {
	for _, stream := range []bool{false, true} {
		f := newFake(t, jsonHandler(400, keyInvalid400))
		_, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), stream)
		if len(errs) != 1 {
			t.Fatalf("stream=%v: errs = %v", stream, errs)
		}
		if c := taxonomy.ClassifyError(errs[0]); c != taxonomy.Auth {
			t.Errorf("stream=%v: class %s, want AUTH (err %v)", stream, c, errs[0])
		}
	}
}
