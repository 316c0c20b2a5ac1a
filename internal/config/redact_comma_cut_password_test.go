// Regression (left open in the twenty-third session, fixed in the twenty-fourth): a
// password cut by a comma whose first half is numeric
// ("nats://admin:2024,Winter@host") kept that half in redacted URLs:
// RedactNATSURL splits a nats.url at every comma, as nats.go does, and
// "nats://admin:2024" is a valid URL (host admin, port 2024), so it was
// printed as a server; only a first half that did not parse was hidden
// (twenty-second session). A middle piece ("nats://admin:pa,2024,W@host")
// was printed the same way, a connect error naming the first half as a
// host ("lookup 2024") kept it, and a Redis password holding ",x://" was
// split as a list and printed whole. Every part that may be a piece of
// such a password (followed, through scheme-less parts, by a scheme-less
// part with an '@') is now hidden whole; lists whose servers name their
// schemes keep their hosts.
package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/config"
)

// TestRedactNATSURLHidesCommaCutPasswordPieces: no piece of a password
// holding commas is printed, whatever the shape.
func TestRedactNATSURLHidesCommaCutPasswordPieces(t *testing.T) {
	for _, tc := range []struct {
		url     string
		secrets []string
	}{
		{"nats://admin:2024,Winter@host", []string{"2024", "Winter"}},
		{"nats://admin:2024,Winter@host:4222", []string{"2024", "Winter"}},
		{"admin:2024,Winter@host:4222", []string{"2024", "Winter"}}, // no scheme
		{"tcp://admin:2024,Winter@host:4222", []string{"2024", "Winter"}},
		{"foo://admin:2024,Winter@host:4222", []string{"2024", "Winter"}},
		{"nats://admin:2024,1999,Winter@host", []string{"2024", "1999", "Winter"}},
		{"nats://admin:pa,2024,Winter@host", []string{"2024", "Winter"}},
		{"nats://admin:2024,1999@host", []string{"2024", "1999"}},
		{"nats://admin:2024,Win@ter@host", []string{"2024", "Win", "ter"}},
		{"nats://admin:2024, ,Winter@host", []string{"2024", "Winter"}},
		{"nats://admin:2024,Winter@[::1]:4222", []string{"2024", "Winter"}},
		{"nats://admin:2024,Winter@[fe80::1]:4222", []string{"2024", "Winter"}},
		{"nats://9876,5432@host:4222", []string{"9876", "5432"}}, // a token
		{"nats://admin:2024#x,Winter@host", []string{"2024", "Winter"}},
		{"nats://admin:pa@ss,Winter@host", []string{"ss", "Winter"}},
		{"nats://h1.example:4222,nats://admin:2024,Winter@host", []string{"2024", "Winter"}},
	} {
		got := config.RedactNATSURL(tc.url)
		for _, s := range tc.secrets {
			if strings.Contains(got, s) {
				t.Errorf("RedactNATSURL(%q) = %q: a piece of the password (%q) is printed", tc.url, got, s)
			}
		}
		if err := config.CheckNATSURL(tc.url); err != nil {
			for _, s := range tc.secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("CheckNATSURL(%q) = %v: a piece of the password (%q) is printed", tc.url, err, s)
				}
			}
		}
	}
}

// TestRedactNATSURLKeepsTheHostsOfRealLists: lists whose servers each name
// their scheme, or carry no user info after the first server, print every
// host; so does the first server of a list when the token follows it in
// a server with its own scheme.
func TestRedactNATSURLKeepsTheHostsOfRealLists(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"nats://h1:4222,nats://h2:4222", "nats://h1:4222,nats://h2:4222"},
		{"nats://h1:4222, h2:4222 ,h3:4222", "nats://h1:4222, h2:4222 ,h3:4222"},
		{"nats://h1:4222,nats://u:p@h2:4222", "nats://h1:4222,nats://u:REDACTED@h2:4222"},
		{"nats://u:p@h1:4222,nats://u:p@h2:4222", "nats://u:REDACTED@h1:4222,nats://u:REDACTED@h2:4222"},
		{"nats://u:p@h1:4222,h2:4222", "nats://u:REDACTED@h1:4222,h2:4222"},
		{"nats://t1@h1:4222,tls://t2@h2:4222", "nats://REDACTED@h1:4222,tls://REDACTED@h2:4222"},
		{"nats://[::1]:4222,nats://u:p@[::2]:4222", "nats://[::1]:4222,nats://u:REDACTED@[::2]:4222"},
		{"nats://[::1]:4222,nats://[::2]:4222", "nats://[::1]:4222,nats://[::2]:4222"},
		{"ws://h1:8080,ws://tok@h2:8080", "ws://h1:8080,ws://REDACTED@h2:8080"},
	} {
		if got := config.RedactNATSURL(tc.in); got != tc.want {
			t.Errorf("RedactNATSURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRedactConnectErrorHidesCommaCutPasswordPieces: nats.go dials the
// first half of such a password as a server and may name it in its error.
func TestRedactConnectErrorHidesCommaCutPasswordPieces(t *testing.T) {
	for _, tc := range []struct{ raw, msg, secret string }{
		{"nats://9876,5432@host:4222", "dial tcp: lookup 9876: no such host", "9876"},
		{"nats://admin:2024,Winter@host", "dial tcp 10.0.0.9:2024: i/o timeout", "2024"},
		{"nats://admin:pa,2024,Winter@host", "dial tcp: lookup 2024: no such host", "2024"},
	} {
		err := config.RedactConnectError(errors.New(tc.msg), tc.raw)
		if strings.Contains(err.Error(), tc.secret) {
			t.Errorf("RedactConnectError(%q, %q) = %q: a piece of the password (%q) is printed", tc.msg, tc.raw, err, tc.secret)
		}
	}
}

// TestRedactURLHidesARedisPasswordHoldingACommaAndAScheme: a Redis URL is
// never a list (go-redis parses one URL), so a password holding ",x://"
// is not split into "servers" and printed.
func TestRedactURLHidesARedisPasswordHoldingACommaAndAScheme(t *testing.T) {
	for _, tc := range []struct{ url, secret string }{
		{"redis://:2024,x://Winter@redis.internal:6379/0", "Winter"},
		{"redis://app:2024,http://Winter@redis.internal:6379", "2024"},
		{"rediss://app:pa,ss://Winter@redis.internal:6380", "Winter"},
		{"redis://app:2024,Winter@redis.internal:6379/0", "2024"},
	} {
		got := config.RedactURL(tc.url)
		if strings.Contains(got, tc.secret) {
			t.Errorf("RedactURL(%q) = %q: a piece of the password (%q) is printed", tc.url, got, tc.secret)
		}
		if !strings.Contains(got, "redis.internal") {
			t.Errorf("RedactURL(%q) = %q: the host is gone", tc.url, got)
		}
	}
}

// commaHosts are the hosts FuzzRedactNATSURLCommaCutPassword builds URLs
// with (fixed, so that what a password shares with them can be told).
var commaHosts = []string{"nats.example:4222", "[::1]:4222", "10.0.0.7", "localhost", "[fe80::1]:4222"}

// commaSchemes are its schemes; "" is a URL without one.
var commaSchemes = []string{"nats://", "tls://", "tcp://", "ws://", "", "NATS://", "foo://"}

// FuzzRedactNATSURLCommaCutPassword: a password (or token) holding commas,
// '@', digits or anything else but "://" leaves no piece of it (between
// ',', '@', ':', '/', '?', '#' and spaces) in RedactNATSURL's output, but
// for pieces the scheme, the user name, the host or "REDACTED" hold too.
func FuzzRedactNATSURLCommaCutPassword(f *testing.F) {
	f.Add(uint8(0), uint8(0), "admin", "2024,Winter")
	f.Add(uint8(4), uint8(1), "admin", "2024,1999,Winter")
	f.Add(uint8(1), uint8(2), "", "9876,5432")
	f.Add(uint8(2), uint8(4), "u", "pa@ss,12,34")
	f.Add(uint8(3), uint8(0), "admin", "2024#x,Win?ter")
	f.Add(uint8(6), uint8(3), "", "1,2,3,4")
	f.Fuzz(func(t *testing.T, schemeIdx, hostIdx uint8, user, password string) {
		if strings.Contains(password, "://") || strings.HasPrefix(password, "//") {
			return // a scheme inside the secret: indistinguishable from a list
		}
		for _, c := range user {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
				return
			}
		}
		scheme := commaSchemes[int(schemeIdx)%len(commaSchemes)]
		host := commaHosts[int(hostIdx)%len(commaHosts)]
		info := password
		if user != "" {
			info = user + ":" + password
		}
		s := scheme + info + "@" + host
		got := strings.ToLower(config.RedactNATSURL(s))
		shared := strings.ToLower(scheme + user + host + "REDACTED")
		for _, piece := range strings.FieldsFunc(password, func(r rune) bool {
			return strings.ContainsRune(",@:/?# \t\r\n", r)
		}) {
			p := strings.ToLower(piece)
			if !strings.Contains(shared, p) && strings.Contains(got, p) {
				t.Fatalf("RedactNATSURL(%q) = %q: a piece of the password (%q) is printed", s, got, piece)
			}
		}
	})
}
