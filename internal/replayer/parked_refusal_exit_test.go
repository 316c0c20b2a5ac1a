package replayer

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Regression (left open in the nineteenth session, fixed in the
// twentieth): when the live server refused the parked stream on every
// start (another stream already on its subjects, or a stream of that name
// made with another retention), `park`, `replay` and `drain` exited 1, the
// code of an outage a retry may fix, so a drain under a process supervisor
// restarted for ever. They now exit 3 (ExitUsage, bad configuration) and
// say what to change, as the worker does for its own streams.
func TestParkedStreamRefusedByTheServerIsAConfigurationError(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(ctx context.Context, t *testing.T, x *fx)
		hint  string
	}{
		{"another stream on its subjects", func(ctx context.Context, t *testing.T, x *fx) {
			if _, err := x.js.CreateStream(ctx, jetstream.StreamConfig{Name: "SQUATTER", Subjects: []string{x.cfg.Replay.ParkedPrefix + ".*.*"}}); err != nil {
				t.Fatal(err)
			}
		}, "replay.parked_prefix"},
		{"a stream of its name with work-queue retention", func(ctx context.Context, t *testing.T, x *fx) {
			if _, err := x.js.CreateStream(ctx, jetstream.StreamConfig{Name: x.cfg.Replay.ParkedStream, Subjects: []string{x.cfg.Replay.ParkedPrefix + ".*.*"},
				Retention: jetstream.WorkQueuePolicy}); err != nil {
				t.Fatal(err)
			}
		}, "replay.parked_stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newFx(t, false)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tc.setup(ctx, t, x)
			x.seed("pr", 1, "TRANSPORT", 0)
			out := x.run(ctx, nil, "park", "--class", "TRANSPORT", "--yes").must(t, ExitUsage, "park with the parked stream refused")
			contains(t, out.stderr, tc.hint)
			if n := len(x.dlqIDs()); n != 1 {
				t.Fatalf("the DLQ holds %d entries after the refused park, want 1 (nothing moved)", n)
			}
		})
	}
}
