package envelope_test

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

const nestedHead = `{"v":1,"invocation_id":"inv-1","agent":"support","user_id":"u1","session_id":"s1",`

// Regression (found in review of this session's fix, twenty-second session): a member inside
// the message that names a field in other case ("Parts", "Text", "partſ")
// or is given twice in one object is refused, not read. CheckJSON refused
// them only at the top level; encoding/json matches nested names
// case-insensitively too and takes the last of repeated ones, so the text a
// case-sensitive or first-wins reader (a moderation gateway, Python, jq)
// saw as "benign" the worker ran as "evil": the same bytes, two texts.
func TestNestedCaseVariantOrDuplicateKeysAreNotRead(t *testing.T) {
	for name, msg := range map[string]string{
		"Parts beside parts": `"message":{"role":"user","parts":[{"text":"benign"}],"Parts":[{"text":"evil"}]}}`,
		"Text beside text":   `"message":{"role":"user","parts":[{"text":"benign","Text":"evil"}]}}`,
		"text given twice":   `"message":{"role":"user","parts":[{"text":"benign","text":"evil"}]}}`,
		"text escaped twice": `"message":{"role":"user","parts":[{"text":"benign","te\u0078t":"evil"}]}}`,
		"long s in parts":    `"message":{"role":"user","parts":[{"text":"benign"}],"partſ":[{"text":"evil"}]}}`,
		"emptied by Text":    `"message":{"role":"user","parts":[{"text":"evil"},{"text":"benign","Text":""}]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			r, err := envelope.DecodeRequest([]byte(nestedHead+msg), 0)
			if err != nil {
				var ie *envelope.InvalidError
				if !errors.As(err, &ie) {
					t.Fatalf("err = %v, want *InvalidError", err)
				}
				return // refused: fine
			}
			if got := r.Message.Text(); got != "benign" {
				t.Fatalf("the worker runs text %q; a case-sensitive, first-wins reader of the same bytes sees %q", got, "benign")
			}
		})
	}
}

// Regression (found in review of this session's fix, twenty-second session): the reason for a
// thought_signature of the wrong type asks for a string: it is base64 text
// in JSON (encoding/json writes and reads []byte as a string), and the
// reason said "want an array", which is refused as well.
func TestTypeErrorBase64FieldWantsAString(t *testing.T) {
	in := nestedHead + `"message":{"role":"user","parts":[{"text":"x","thought_signature":5}]}}`
	_, err := envelope.DecodeRequest([]byte(in), 0)
	var ie *envelope.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v, want *InvalidError", err)
	}
	if strings.Contains(ie.Reason, "want an array") {
		t.Fatalf("reason %q: thought_signature is a (base64) string in JSON, not an array", ie.Reason)
	}
}

// Regression (found in review of this session's fix, twenty-second session): unknown top-level
// members cost no allocation each. CheckJSON kept every unknown member name
// in a map to refuse a repeated one, which protects nothing the worker
// reads (encoding/json ignores unknown members, as the contract does), yet
// on the worker's hot path a request of many small unknown members (within
// DefaultMaxSize) cost ~110,000 allocations (~7.7 MB) and ~4x the decode
// time, where DecodeRequest before the change made ~1,700.
func TestUnknownMembersDoNotCostAnAllocationEach(t *testing.T) {
	var buf bytes.Buffer
	buf.WriteString(nestedHead + `"message":{"role":"user","parts":[{"text":"x"}]}`)
	for i := 0; buf.Len() < envelope.DefaultMaxSize-20; i++ {
		buf.WriteString(`,"` + strconv.Itoa(i) + `":0`)
	}
	buf.WriteString("}")
	data := buf.Bytes()
	if _, err := envelope.DecodeRequest(data, 0); err != nil {
		t.Fatalf("a request with unknown members (ignored by the contract) was refused: %v", err)
	}
	allocs := testing.AllocsPerRun(3, func() { _, _ = envelope.DecodeRequest(data, 0) })
	if allocs > 10000 {
		t.Fatalf("DecodeRequest of a %d-byte request of unknown members made %.0f allocations (want < 10000; ~1,700 before CheckJSON)", len(data), allocs)
	}
}

// Regression (found in review of this session's fix, twenty-second session): a
// metadata key given twice is refused (readers differ on which counts),
// while keys differing in case are two keys, and a repeated unknown
// top-level member is ignored, as unknown members are.
func TestNestedDuplicatesInMetadata(t *testing.T) {
	const msg = `"message":{"role":"user","parts":[{"text":"x"}]}`
	var ie *envelope.InvalidError
	if _, err := envelope.DecodeRequest([]byte(nestedHead+msg+`,"metadata":{"k":"1","k":"2"}}`), 0); !errors.As(err, &ie) {
		t.Errorf("metadata key given twice: err = %v, want *InvalidError", err)
	}
	r, err := envelope.DecodeRequest([]byte(nestedHead+msg+`,"metadata":{"K":"1","k":"2"}}`), 0)
	if err != nil || r.Metadata["K"] != "1" || r.Metadata["k"] != "2" {
		t.Errorf("metadata keys K and k: %v, %v; want both kept", r, err)
	}
	if _, err := envelope.DecodeRequest([]byte(nestedHead+msg+`,"x":1,"x":{"y":1,"y":2}}`), 0); err != nil {
		t.Errorf("repeated unknown member refused: %v", err)
	}
}
