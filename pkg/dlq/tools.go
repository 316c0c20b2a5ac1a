package dlq

import "encoding/json"

// MaxToolsCompletedSize bounds the encoded tools_completed list of an entry
// (4 KiB, at least 61 names of tool.MaxNameLen): it is part of what
// EntryFieldsReserve covers, so a long invocation's list never cuts a
// request the worker accepted. An invocation can complete hundreds of tool
// calls (every run's, up to its model-call budget).
const MaxToolsCompletedSize = 4 << 10

// boundToolsCompleted keeps the last names of e.ToolsCompleted whose JSON
// list takes at most MaxToolsCompletedSize bytes and adds the number of the
// others, the earliest, to e.ToolsCompletedOmitted. The most recent tools
// are kept: they are the ones closest to the failure (what the run was
// doing, a loop's repeated call); the earliest are mostly earlier runs'
// (the list spans the whole invocation), and `dlq-replayer show` lists the
// invocation's completed tool effects from their records anyway. It
// reslices and never writes to the list's backing array, which a shallow
// copy of the entry shares. A second call changes nothing.
func (e *Entry) boundToolsCompleted() {
	kept, dropped := KeepLastNames(e.ToolsCompleted, MaxToolsCompletedSize)
	if dropped > 0 {
		e.ToolsCompleted = kept
		e.ToolsCompletedOmitted += dropped
	}
}

// KeepLastNames returns the last names whose JSON list (brackets, quotes,
// escapes and commas) takes at most max bytes, and how many of the first
// ones it left out. It reslices names and never writes to its backing
// array. A DLQ entry's tools_completed and a result's tools_run are
// bounded with it.
func KeepLastNames(names []string, max int) (kept []string, dropped int) {
	bound := 2 // the brackets
	for _, t := range names {
		bound += 6*len(t) + 3 // every byte escaped, the quotes and the comma
	}
	if bound <= max {
		return names, 0 // the usual case, without encoding a name
	}
	size, keep := 2, 0
	for i := len(names) - 1; i >= 0; i-- {
		n := jsonStringSize(names[i])
		if keep > 0 {
			n++ // the comma
		}
		if size+n > max {
			break
		}
		size += n
		keep++
	}
	return names[len(names)-keep:], len(names) - keep
}

// jsonStringSize is an upper bound of s's size as a JSON string in an
// entry: json.Marshal escapes '<', '>' and '&', which Encode does not.
func jsonStringSize(s string) int {
	b, err := json.Marshal(s)
	if err != nil { // a string always marshals; count it as all escapes
		return 6*len(s) + 2
	}
	return len(b)
}
