package config_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/config"
)

// secretMark starts every secret the redaction fuzz targets build: a
// password (or a NATS token) is secretMark followed by the fuzzer's bytes,
// so any trace of the secret's beginning in the output ("Kq7") is a leak,
// wherever it shows up and however the rest was quoted or cut.
const secretMark = "Kq7"

// redactSchemes are the schemes the targets build URLs with: the NATS
// ones, whose user name alone is a token, then others.
var redactSchemes = []string{"nats", "tls", "ws", "wss", "NATS", "redis", "rediss", "http", "unix"}

// redactInput builds a URL with a secret from the fuzzer's parts, or
// reports false for parts that would not be one URL with user info (a
// second "://" turns it into a list; '@' or ':' in the user name moves the
// secret) or whose non-secret parts hold the mark themselves.
func redactInput(form, schemeIdx uint8, user, secret, host string) (s string, ok bool) {
	for _, p := range []string{user, secret, host} {
		if strings.Contains(p, "://") {
			return "", false
		}
	}
	if strings.Contains(host, "@") || strings.ContainsAny(user, ":@/?#") {
		return "", false
	}
	scheme := redactSchemes[int(schemeIdx)%len(redactSchemes)]
	plain := scheme + user + host
	if u, err := url.PathUnescape(plain); err == nil {
		plain += u
	}
	if strings.Contains(strings.ToLower(plain), strings.ToLower(secretMark)) {
		return "", false
	}
	if form%3 != 0 || natsLike(scheme) {
		// nats.go splits a server URL on every comma, so a NATS secret
		// cannot hold one: the string is a list whose parts are redacted
		// one by one (and a part before the comma is a host to nats.go).
		if strings.Contains(secret, ",") {
			return "", false
		}
	}
	switch form % 3 {
	case 0: // scheme://user:password@host
		return scheme + "://" + user + ":" + secretMark + secret + "@" + host, true
	case 1: // NATS token: scheme://token@host
		if strings.Contains(secret, ":") {
			return "", false // that is user:password, case 0
		}
		return redactSchemes[int(schemeIdx)%5] + "://" + secretMark + secret + "@" + host, true
	default: // NATS token without a scheme (nats.go adds nats://)
		if strings.Contains(secret, ":") {
			return "", false
		}
		return secretMark + secret + "@" + host, true
	}
}

func natsLike(scheme string) bool {
	switch strings.ToLower(scheme) {
	case "nats", "tls", "ws", "wss":
		return true
	}
	return false
}

func addRedactSeeds(f *testing.F) {
	f.Add(uint8(0), uint8(5), "user", "s3cret", "127.0.0.1:6379/0")
	f.Add(uint8(0), uint8(0), "", "pa,ss", "h:4222")
	f.Add(uint8(0), uint8(5), "app", "s3cr%et", "127.0.0.1:6379/0")
	f.Add(uint8(0), uint8(0), "user", "x", "127.0.0.1:42x2")
	f.Add(uint8(1), uint8(0), "", "token", "127.0.0.1:4222")
	f.Add(uint8(1), uint8(3), "", "tok en", "nats.example:443")
	f.Add(uint8(2), uint8(0), "", "token", "localhost")
	f.Add(uint8(0), uint8(6), "u", "p@ss", "h:6380")
	f.Add(uint8(0), uint8(7), "u", "pass", "h/p?q#f")
}

// FuzzRedactURL: RedactURL never panics, leaves a string without user info
// (and without a query option whose name holds "password") as it is, and
// no part of a password (or of a NATS token) survives it, whatever the
// password holds; an unparseable URL loses its whole user info, as the
// function promises.
func FuzzRedactURL(f *testing.F) {
	addRedactSeeds(f)
	f.Add(uint8(0), uint8(5), "u", "pass", "h:26379/0?master_name=m&password=x&y")
	f.Fuzz(func(t *testing.T, form, schemeIdx uint8, user, secret, host string) {
		for _, s := range []string{user, secret, host, user + "://" + host} {
			if !strings.Contains(s, "@") && !hasPasswordOption(s) {
				if got := config.RedactURL(s); got != s {
					t.Fatalf("RedactURL(%q) = %q: a string without user info was changed", s, got)
				}
			}
		}
		s, ok := redactInput(form, schemeIdx, user, secret, host)
		if !ok {
			return
		}
		got := config.RedactURL(s)
		if strings.Contains(got, secretMark) {
			t.Fatalf("RedactURL(%q) = %q: the secret survives", s, got)
		}
		if again := config.RedactURL(got); strings.Contains(again, secretMark) {
			t.Fatalf("RedactURL twice (%q) = %q", s, again)
		}
	})
}

// hasPasswordOption reports whether s has a query option RedactURL
// redacts: after a '?' or '&', a name holding "password" (%-decoded, in any
// case) followed by '='.
func hasPasswordOption(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '?' && s[i] != '&' {
			continue
		}
		end := strings.IndexAny(s[i+1:], "=&#?")
		if end < 0 || s[i+1+end] != '=' {
			continue
		}
		name := s[i+1 : i+1+end]
		if d, err := url.QueryUnescape(name); err == nil {
			name = d
		}
		if strings.Contains(strings.ToLower(name), "password") {
			return true
		}
	}
	return false
}

// FuzzRedactURLError: the error of a URL that does not parse, through
// RedactURLError, never holds the password's (or token's) text: neither
// the URL url.Parse quotes in its message (%q-escaped) nor a part of the
// password it names elsewhere (an "invalid port" of a password cut at
// '?'). errors.As still finds the *url.Error.
func FuzzRedactURLError(f *testing.F) {
	addRedactSeeds(f)
	f.Fuzz(func(t *testing.T, form, schemeIdx uint8, user, secret, host string) {
		s, ok := redactInput(form, schemeIdx, user, secret, host)
		if !ok {
			return
		}
		_, perr := url.Parse(s)
		if perr == nil {
			return
		}
		err := config.RedactURLError(fmt.Errorf("redis: url: %w", perr))
		if msg := err.Error(); strings.Contains(msg, secretMark) {
			t.Fatalf("url.Parse(%q) error through RedactURLError = %q: the secret survives", s, msg)
		}
		var ue *url.Error
		if !errors.As(err, &ue) {
			t.Fatalf("errors.As lost the *url.Error of %q", s)
		}
	})
}
