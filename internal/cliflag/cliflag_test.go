package cliflag_test

import (
	"flag"
	"io"
	"slices"
	"testing"

	"github.com/agentfleet/agentfleet/internal/cliflag"
)

func TestParseInterspersed(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	yes := fs.Bool("yes", false, "")
	class := fs.String("class", "", "")
	pos, err := cliflag.ParseInterspersed(fs, []string{"show", "--class", "SERVER", "inv-1", "--yes", "--", "--not-a-flag"})
	if err != nil {
		t.Fatal(err)
	}
	if !*yes || *class != "SERVER" || !slices.Equal(pos, []string{"show", "inv-1", "--not-a-flag"}) {
		t.Fatalf("yes=%v class=%q pos=%v", *yes, *class, pos)
	}
	if _, err := cliflag.ParseInterspersed(fs, []string{"x", "--bogus"}); err == nil {
		t.Fatal("unknown flag accepted")
	}
}
