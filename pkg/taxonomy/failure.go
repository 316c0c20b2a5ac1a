package taxonomy

import (
	"fmt"
	"strconv"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Failure is one classified failure with its raw message kept beside the
// class (the class says what to do; the raw message says what happened, for
// logs and the weekly UNKNOWN review). Raw may contain provider text and
// host names or addresses (a dial error): log it sanitised
// (tool.SanitizeString, as AfterModel and OnModelError do), never put it
// in a metric label or show it to a user.
type Failure struct {
	// Class is the failure class (Canceled for a cancelled call).
	Class Class
	// Channel is how the failure surfaced.
	Channel Channel
	// Raw is the raw message: the error text, or the response's error
	// message (with its code, when there is no message).
	Raw string
	// Model is the model name the failure is counted against.
	Model string
	// Code is the structured code the class was derived from: the HTTP
	// status for thrown provider errors, the finish reason or error code
	// for in-band failures. Empty when there was none.
	Code string
}

// Policy returns the handling rule of f's class.
func (f Failure) Policy() Policy { return PolicyFor(f.Class) }

// FailureFromError classifies err (see ClassifyError) as a thrown failure
// of modelName.
func FailureFromError(modelName string, err error) Failure {
	f := Failure{Class: ClassifyError(err), Channel: ChannelThrown, Model: modelName}
	if err != nil {
		f.Raw = errorText(err)
		if code := statusOf(err); code != 0 {
			f.Code = strconv.Itoa(code)
		}
	}
	return f
}

// errorText returns err.Error(), or a placeholder when Error panics (a
// typed nil pointer).
func errorText(err error) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("<%T: Error() panicked>", err)
		}
	}()
	return err.Error()
}

// statusOf returns the HTTP status of the provider error in err's chain, or
// 0.
func statusOf(err error) (code int) {
	defer func() {
		if recover() != nil {
			code = 0
		}
	}()
	_, code, _ = classifyProvider(err)
	return code
}

// FailureFromResponse classifies r (see ClassifyResponse) as an in-band
// failure of modelName. It returns false for a healthy response.
func FailureFromResponse(modelName string, r *model.Response) (Failure, bool) {
	c, failed := ClassifyResponse(r)
	if !failed {
		return Failure{}, false
	}
	f := Failure{Class: c, Channel: ChannelInBand, Model: modelName}
	if r != nil {
		f.Code = string(r.FinishReason)
		if f.Code == "" {
			f.Code = string(r.ErrorCode)
		}
		f.Raw = r.ErrorMessage
		if f.Raw == "" && f.Code != "" {
			f.Raw = f.Code
		}
		if f.Raw == "" {
			f.Raw = "empty response: no content, no finish reason, no error code"
		}
	} else {
		f.Raw = "nil response"
	}
	return f, true
}
