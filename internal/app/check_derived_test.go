package app_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
)

// Values that config.Validate cannot judge (it does not know the streams'
// or the retry decorator's rules) failed only inside StartWorker, after the
// embedded server started or NATS answered: exit 1 instead of 2, and with
// NATS down a wait for NATS for ever before the file was said to be wrong.
// CheckDerived refuses them first, as ErrBadConfig naming the key.
func TestCheckDerivedRefusesValuesThatFailAtStart(t *testing.T) {
	if err := app.CheckDerived(config.DefaultWorker()); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, tc := range []struct {
		name string
		set  func(*config.Worker)
	}{
		{"streams.replicas 6 (JetStream allows 1..5)", func(c *config.Worker) { c.Streams.Replicas = 6 }},
		{"model.retry.initial above model.retry.max", func(c *config.Worker) { c.Model.Retry.Initial = 10 * time.Second }},
		{"streams.results equal to streams.requests", func(c *config.Worker) { c.Streams.Results = c.Streams.Requests }},
		{"streams.result_prefix equal to streams.request_prefix", func(c *config.Worker) { c.Streams.ResultPrefix = c.Streams.RequestPrefix }},
		{"streams.consumer not a valid name", func(c *config.Worker) { c.Streams.Consumer = "my workers" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config.DefaultWorker()
			tc.set(&c)
			err := app.CheckDerived(c)
			if !errors.Is(err, app.ErrBadConfig) {
				t.Fatalf("%s: %v, want ErrBadConfig", tc.name, err)
			}
			if !strings.Contains(err.Error(), "streams") && !strings.Contains(err.Error(), "model.retry") {
				t.Errorf("%s: error does not name the key: %v", tc.name, err)
			}
		})
	}
}
