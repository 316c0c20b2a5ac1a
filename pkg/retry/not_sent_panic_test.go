package retry

import (
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Regression (found in review, twenty-first session): the decorator's
// "was it sent?" test survives an error chain whose methods panic (a
// typed-nil *url.Error wrapped with %w, as an SDK bug makes), as the
// taxonomy's classifier does; errors.Is panicked there.
func TestIsNotSentSurvivesAPanickingChain(t *testing.T) {
	var nilURL *url.Error
	for name, err := range map[string]error{
		"wrapped typed nil": fmt.Errorf("call: %w", nilURL),
		"joined typed nil":  errors.Join(errors.New("x"), nilURL),
	} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: isNotSent panicked: %v", name, p)
				}
			}()
			if isNotSent(err) {
				t.Errorf("%s: isNotSent = true, want false", name)
			}
		}()
	}
	if !isNotSent(fmt.Errorf("refused: %w", model.ErrNotSent)) {
		t.Error("a wrapped ErrNotSent is not seen")
	}
}
