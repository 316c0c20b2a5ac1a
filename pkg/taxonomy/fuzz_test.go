package taxonomy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"

	"github.com/openai/openai-go/v3"
	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// FuzzClassifyResponse checks that the in-band classifier never panics and
// always answers with a class from the table (or healthy).
func FuzzClassifyResponse(f *testing.F) {
	for _, fr := range model.KnownFinishReasons {
		f.Add(string(fr), "", "", "text", false, false)
		f.Add("", string(fr), "msg", "", false, true)
	}
	f.Add("", "Unknown error.", "Unknown error.", "", false, true)
	f.Add("", "", "", "", true, false)
	f.Add("\x00weird", "BLOCKED_REASON_UNSPECIFIED", "\xff", "", false, false)
	f.Fuzz(func(t *testing.T, finish, code, msg, text string, partial, nilContent bool) {
		r := &model.Response{FinishReason: model.FinishReason(finish), ErrorCode: model.FinishReason(code), ErrorMessage: msg, Partial: partial}
		if !nilContent {
			r.Content = &model.Content{Role: model.RoleModel, Parts: []*model.Part{{Text: text}, nil}}
		}
		c, failed := taxonomy.ClassifyResponse(r)
		if failed != (c != "") {
			t.Fatalf("inconsistent result (%q, %v)", c, failed)
		}
		if failed && !c.Valid() {
			t.Fatalf("class %q not in the table", c)
		}
		if !failed && !partial && finish == "" && code == "" && (nilContent || text == "") {
			t.Fatalf("empty response classified healthy: %+v", r)
		}
		fl, ok := taxonomy.FailureFromResponse("m", r)
		if ok != failed || (ok && fl.Class != c) {
			t.Fatalf("FailureFromResponse disagrees: %+v", fl)
		}
	})
}

// FuzzClassifyError builds error chains from fuzz input (every supported
// type, typed nil pointers, joins and arbitrary JSON details) and checks
// that the thrown classifier never panics and answers with a table class
// or Canceled.
func FuzzClassifyError(f *testing.F) {
	f.Add([]byte{0, 1, 2}, 429, `[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"PerDay"}]}]`, "insufficient_quota")
	f.Add([]byte{3, 4, 5, 6}, 503, `[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"17s"}]`, "")
	f.Add([]byte{7, 8, 9, 10, 11, 12, 13}, 0, `null`, "x")
	f.Add([]byte{14, 15, 16, 17}, -1, `[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[1,"a",{"quotaMetric":7}]}]`, "")
	f.Fuzz(func(t *testing.T, ops []byte, status int, detailsJSON, code string) {
		var details []map[string]any
		_ = json.Unmarshal([]byte(detailsJSON), &details)
		var err error
		for i, op := range ops {
			if i > 64 {
				break
			}
			switch op % 18 {
			case 0:
				err = genai.APIError{Code: status, Details: details}
			case 1:
				err = &genai.APIError{Code: status, Details: details}
			case 2:
				err = &openai.Error{StatusCode: status, Code: code, Type: code}
			case 3:
				err = &openai.Error{Code: code, Response: &http.Response{StatusCode: status}}
			case 4:
				err = &model.ProviderError{StatusCode: status, Code: code, QuotaExhausted: status%2 == 0, Err: err}
			case 5:
				err = fmt.Errorf("wrap: %w", err)
			case 6:
				err = errors.Join(err, genai.APIError{Code: status})
			case 7:
				err = &model.CallBudgetError{Limit: status}
			case 8:
				err = errors.Join(err, context.Canceled)
			case 9:
				err = fmt.Errorf("%w", context.DeadlineExceeded)
			case 10:
				err = &net.OpError{Op: "read", Err: err}
			case 11:
				err = errors.Join(err, syscall.ECONNRESET, io.ErrUnexpectedEOF)
			case 12:
				var nilPE *model.ProviderError
				err = errors.Join(err, nilPE)
			case 13:
				var nilOE *openai.Error
				err = errors.Join(err, nilOE)
			case 14:
				var nilGE *genai.APIError
				err = errors.Join(err, nilGE)
			case 15:
				err = &os.SyscallError{Syscall: "write", Err: syscall.EPIPE}
			case 16:
				err = errors.Join(err, nil)
			case 17:
				err = statusOnly{status}
			}
		}
		c := taxonomy.ClassifyError(err)
		if c != taxonomy.Canceled && !c.Valid() {
			t.Fatalf("class %q not in the table", c)
		}
		if c == taxonomy.BadInput {
			t.Fatal("the classifier never assigns BAD_INPUT")
		}
		if (c == taxonomy.Canceled) != taxonomy.IsCanceled(err) {
			t.Fatalf("Canceled and IsCanceled disagree for %v", err)
		}
		_ = taxonomy.FailureFromError("m", err)
	})
}
