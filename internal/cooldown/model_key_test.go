package cooldown_test

import (
	"context"
	"testing"
)

// Regression (found in review, seventeenth session): two model names that
// differ only in ":" against "_" (or " ") shared one cooldown key in Redis:
// an outage of one model paused the other. Every store keeps them apart.
func TestModelsWhoseNamesDifferInSeparatorsCoolApart(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			for range 10 {
				if _, err := s.Record(ctx, "sim:support", true); err != nil {
					t.Fatal(err)
				}
			}
			if until, err := s.Status(ctx, "sim:support"); err != nil || until.IsZero() {
				t.Fatalf("test premise: sim:support is not cooling down (%v, %v)", until, err)
			}
			for _, other := range []string{"sim_support", "sim support", "sim%3Asupport"} {
				if until, err := s.Status(ctx, other); err != nil || !until.IsZero() {
					t.Errorf("%q cools down with sim:support (until %v, err %v)", other, until, err)
				}
			}
		})
	}
}
