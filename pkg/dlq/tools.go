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
	size := 2 // the brackets
	keep := 0
	for i := len(e.ToolsCompleted) - 1; i >= 0; i-- {
		n := jsonStringSize(e.ToolsCompleted[i])
		if keep > 0 {
			n++ // the comma
		}
		if size+n > MaxToolsCompletedSize {
			break
		}
		size += n
		keep++
	}
	if drop := len(e.ToolsCompleted) - keep; drop > 0 {
		e.ToolsCompleted = e.ToolsCompleted[drop:]
		e.ToolsCompletedOmitted += drop
	}
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
