// Package fuzztest holds helpers for fuzz targets.
package fuzztest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// AddByteCorpus adds the []byte entries of another target's corpus, in
// testdata/fuzz/<target> of the package under test, as seeds of f, so a
// new target starts from what an older one on the same input found.
func AddByteCorpus(f *testing.F, target string) {
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		lines := strings.SplitN(string(b), "\n", 3)
		if len(lines) < 2 || lines[0] != "go test fuzz v1" {
			continue
		}
		l := strings.TrimSpace(lines[1])
		if !strings.HasPrefix(l, "[]byte(") || !strings.HasSuffix(l, ")") {
			continue
		}
		if s, err := strconv.Unquote(l[len("[]byte(") : len(l)-1]); err == nil {
			f.Add([]byte(s))
		}
	}
}
