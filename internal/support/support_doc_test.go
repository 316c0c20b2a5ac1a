package support_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Regression (found in review, twenty-second session): the package doc and
// MemoryOrders' doc must not say the demo uses the in-memory orders
// service. The package comment said
// "tests and the demo use the in-memory orders service" and MemoryOrders'
// says it is "for tests and the demo". The demo (`worker --demo`) and every
// worker use NATSOrders (embedded/NATS-only, internal/app openNATSStores)
// or RedisOrders (openRedisStores): no non-test code outside this package
// constructs a MemoryOrders. An operator reading the docs expects demo
// refunds to vanish with the process; they are durable effects in the
// DEMO_REFUNDS bucket or Redis demo:refunds, which the demo counts.
func TestDocDoesNotSayTheDemoUsesMemoryOrders(t *testing.T) {
	// Behaviour: no production code builds a MemoryOrders.
	root := filepath.Join("..", "..")
	users := 0
	_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") ||
			strings.Contains(p, filepath.Join("internal", "support")) {
			return nil
		}
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), "NewMemoryOrders") {
			users++
		}
		return nil
	})
	if users != 0 {
		t.Skipf("%d production files use NewMemoryOrders: the doc may be right", users)
	}
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil && strings.Contains(f.Doc.Text(), "demo use the in-memory") {
			t.Errorf("%s: package doc says the demo uses the in-memory orders service; it uses NATSOrders or RedisOrders", name)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.GenDecl); ok && ts.Doc != nil && strings.Contains(ts.Doc.Text(), "MemoryOrders is an in-memory Orders for tests and the demo") {
				t.Errorf("%s: MemoryOrders doc says it is for the demo; the demo never uses it", name)
			}
			return true
		})
	}
}
