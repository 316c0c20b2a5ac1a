package retry_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/retry"
)

// Regression (found in review, twentieth session): the product retries a
// transient failure once by default (DefaultMaxAttempts 2, README
// "Transient model failures are retried once by default"), but the field a
// library user reads in go doc said "Default 3": an engineer sizing quota
// or a deadline from it plans for a retry that never comes. The test reads
// the real doc comment of Config.MaxAttempts (go/parser) and compares the
// default it names with the constant WithDefaults applies.
func TestMaxAttemptsDocNamesTheDefault(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Config" {
			return true
		}
		for _, fld := range ts.Type.(*ast.StructType).Fields.List {
			if len(fld.Names) == 1 && fld.Names[0].Name == "MaxAttempts" {
				doc = fld.Doc.Text()
			}
		}
		return false
	})
	m := regexp.MustCompile(`Default (\d+)`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("Config.MaxAttempts doc names no default: %q", doc)
	}
	if m[1] != fmt.Sprint(retry.DefaultMaxAttempts) {
		t.Fatalf("Config.MaxAttempts doc says %q, but DefaultMaxAttempts is %d (WithDefaults applies it)", m[0], retry.DefaultMaxAttempts)
	}
}
