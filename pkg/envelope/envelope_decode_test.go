package envelope_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// goodOpen is a valid request whose closing brace is left off, so a test
// can append members.
const goodOpen = `{"v":1,"invocation_id":"inv-1","agent":"support","user_id":"u1","session_id":"s1","message":{"role":"user","parts":[{"text":"refund A-1042"}]}`

// Regression (found in review, twenty-second session): a member whose name is a
// field's in other case ("User_ID") is not read as the field. The contract
// names the request's fields in lower case ("user_id") and says unknown
// fields are ignored. encoding/json matches keys case-insensitively, so
// such a member (an unknown field by the contract, ignored by any
// case-sensitive reader: Python, jq, a gateway that checks the user) set
// the user id the worker ran as: the same bytes named two users.
// DecodeRequest refuses it now.
func TestDecodeRequestKeysAreCaseSensitive(t *testing.T) {
	for name, extra := range map[string]string{
		"user":    `,"User_ID":"mallory"`,
		"agent":   `,"AGENT":"billing"`,
		"session": `,"Session_Id":"someone-elses"`,
	} {
		t.Run(name, func(t *testing.T) {
			r, err := envelope.DecodeRequest([]byte(goodOpen+extra+`}`), 0)
			if err != nil {
				var ie *envelope.InvalidError
				if !errors.As(err, &ie) {
					t.Fatalf("err = %v, want *InvalidError", err)
				}
				return // refused: fine
			}
			if r.UserID != "u1" || r.Agent != "support" || r.SessionID != "s1" {
				t.Fatalf("member %s (not a contract field) was read as one: user %q agent %q session %q, want u1/support/s1",
					extra, r.UserID, r.Agent, r.SessionID)
			}
		})
	}
}

// Regression (found in review, twenty-second session): a request naming a field
// twice is refused. It means two things to two readers (first wins in some,
// last in others); the decoder for outside input took the last one
// silently.
func TestDecodeRequestRefusesDuplicateKeys(t *testing.T) {
	in := goodOpen + `,"agent":"billing"}`
	r, err := envelope.DecodeRequest([]byte(in), 0)
	var ie *envelope.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("DecodeRequest of a request naming agent twice = %+v, %v; want *InvalidError (it runs agent %q)", r, err, agentOf(r))
	}
}

func agentOf(r *envelope.Request) string {
	if r == nil {
		return ""
	}
	return r.Agent
}

// Regression (found in review, twenty-second session): the reason for a member
// of the wrong type names the field. A JSON object with one (a numeric user
// id, a numeric metadata value, v written 1.0) was refused with "not a JSON
// request object": the worker dead-letters it as BAD_INPUT with that
// reason, and the operator looking at a JSON object was told it is not
// one, with no word of which field is wrong.
func TestDecodeRequestTypeErrorNamesTheField(t *testing.T) {
	for field, in := range map[string]string{
		"user_id":  strings.Replace(goodOpen, `"user_id":"u1"`, `"user_id":42`, 1) + `}`,
		"metadata": goodOpen + `,"metadata":{"priority":1}}`,
		"v":        strings.Replace(goodOpen, `"v":1`, `"v":1.0`, 1) + `}`,
	} {
		t.Run(field, func(t *testing.T) {
			_, err := envelope.DecodeRequest([]byte(in), 0)
			var ie *envelope.InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want *InvalidError", err)
			}
			if strings.Contains(ie.Reason, "not a JSON request object") || !regexp.MustCompile(`\b`+field+`\b`).MatchString(ie.Reason) {
				t.Fatalf("reason %q: the request is a JSON object; want a reason naming the field %q", ie.Reason, field)
			}
		})
	}
}

// Regression (found in review, twenty-second session): escaped lone surrogates
// do not make two user ids one. DecodeRequest refuses raw invalid UTF-8
// because encoding/json would read it as U+FFFD ("distinct ids becoming
// one session", Validate's doc). The same happened with escaped lone
// surrogates, which are plain ASCII bytes: "u\ud800" and "u\udbff" both
// decode to "u\uFFFD", so two distinct user ids sent by a producer (a
// JavaScript string cut inside a surrogate pair) ran as one user and shared
// one session.
func TestDecodeRequestEscapedLoneSurrogatesDoNotMergeIDs(t *testing.T) {
	a, errA := envelope.DecodeRequest([]byte(strings.Replace(goodOpen, `"user_id":"u1"`, `"user_id":"u\ud800"`, 1)+`}`), 0)
	b, errB := envelope.DecodeRequest([]byte(strings.Replace(goodOpen, `"user_id":"u1"`, `"user_id":"u\udbff"`, 1)+`}`), 0)
	if errA != nil || errB != nil {
		return // refused: fine
	}
	if a.UserID == b.UserID {
		t.Fatalf(`user ids "u\ud800" and "u\udbff" both decode to %q: two users, one session`, a.UserID)
	}
}
