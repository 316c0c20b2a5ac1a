package config

import (
	"strings"
	"testing"
)

// url.Parse ends the authority at the first '#', '?' or '/', and takes the
// user info up to the last '@' before it. When the secret holds an '@'
// before such a character, url.Parse finds a user (so the new
// '@'-after-scheme rule, which runs only when u.User is nil, is skipped)
// and the rest of the secret is printed as fragment, query or path. A
// mixed server list (one scheme, a scheme-less second server with its own
// token) keeps the first token as the "user name".
func TestRedactURLLeaksAfterParsedUserInfo(t *testing.T) {
	for _, tc := range []struct{ url, secret string }{
		{"redis://user:p@ss#w0rd@redis.example:6379", "w0rd"},
		{"redis://:p@ss/w0rd@redis.example:6379/0", "w0rd"},
		{"nats://t0k@en?x@nats.example:4222", "en?x"},
		{"nats://s3cr3t@h1.example:4222,tok2@h2.example:4222", "s3cr3t"},
	} {
		got := RedactURL(tc.url)
		if strings.Contains(got, tc.secret) {
			t.Errorf("RedactURL(%q) = %q: part of the secret (%q) is printed", tc.url, got, tc.secret)
		}
	}
}

// A URL without user info whose query holds an '@' (go-redis reads
// client_name from the query) loses its host: the operator reads
// "redis://REDACTED@team", a host that does not exist.
func TestRedactURLKeepsTheHostWhenTheQueryHoldsAnAt(t *testing.T) {
	in := "redis://redis.example:6379/0?client_name=svc@team"
	if got := RedactURL(in); !strings.Contains(got, "redis.example:6379") {
		t.Errorf("RedactURL(%q) = %q: the host is gone (nothing in it is a secret)", in, got)
	}
}
