package dlq

import "testing"

// Regression (found in review, twenty-fourth session): a filtered purge on
// a server older than 2.9.18 could make another replayer lose dead letters
// (see minBatchDeleteVersion). DeleteBelow batches only on 2.9.18 and later,
// and a version it cannot read, or a pre-release of 2.9.18, counts as older.
func TestBatchDeleteVersion(t *testing.T) {
	for v, want := range map[string]bool{
		"2.9.10":      false, // the machine's: moves other consumers
		"2.9.11":      false,
		"2.9.12":      false, // consumers fixed; a restart could still purge the whole stream
		"2.9.17":      false,
		"2.9.18-RC.1": false,
		"2.9.18":      true,
		"2.9.25":      true,
		"2.10.0":      true,
		"2.10.10":     true,
		"2.10.11":     true,
		"2.11.0-dev":  true,
		"2.15.2":      true,
		"3.0.0":       true,
		"v2.10.4":     true,
		"2.8.4":       false,
		"1.99.99":     false,
		"":            false, // not connected
		"2.10":        false,
		"2.x.1":       false,
		"2.10.-1":     false,
	} {
		if got := batchDeleteVersion(v); got != want {
			t.Errorf("batchDeleteVersion(%q) = %v, want %v", v, got, want)
		}
	}
}
