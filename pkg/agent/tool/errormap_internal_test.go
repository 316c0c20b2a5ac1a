package tool

import (
	"testing"
)

// sanitizeReference is SanitizeString without the substring pre-checks:
// every pattern always runs.
func sanitizeReference(s string) string {
	return sanitizeLoop(firstLinePrintable(s), func(s string) string {
		if stackFrameRE.MatchString(s) || sqlRE.MatchString(s) {
			return redacted
		}
		s = urlRE.ReplaceAllString(s, redacted)
		s = redactX509(s)
		s = dsnFieldRE.ReplaceAllString(s, "${1}="+redacted)
		s = secretFieldRE.ReplaceAllString(s, "${1}"+redacted)
		s = secretJSONRE.ReplaceAllString(s, `${1}"`+redacted+`"`)
		s = redactSecretColon(s)
		s = authValueRE.ReplaceAllString(s, "${1}"+redacted)
		s = pathRE.ReplaceAllString(s, "${1}"+redacted)
		s = ipv6RE.ReplaceAllString(s, redacted)
		s = userinfoRE.ReplaceAllString(s, redacted+"@")
		s = netHostPortRE.ReplaceAllString(s, "${1}"+redacted)
		s = hostPortRE.ReplaceAllString(s, redacted)
		s = lookupRE.ReplaceAllString(s, "${1}"+redacted+"${2}")
		s = internalHost.ReplaceAllString(s, redacted)
		s = ipRE.ReplaceAllString(s, redacted)
		s = bareKeyRE.ReplaceAllStringFunc(s, redactBareKey) // last, as in redactOnce
		return s
	})
}

// The pre-checks only skip patterns that cannot match: SanitizeString and
// the reference agree on every input.
func FuzzSanitizeMatchesReference(f *testing.F) {
	for _, s := range []string{
		"", "order not found", "amount exceeds the refundable amount",
		"goroutine 7 [running]:", "main.go:42 boom", "panic: nil map", "at com.x.Y(Y.java:12)",
		"Traceback (most recent call last):", "SELECT a FROM b", "ſelect a ſrom b", "pq: duplicate key",
		"ORA-00942", "see https://x.example/y", "dial tcp 10.0.0.7:5432: refused", "db.internal is down",
		"host LOCALHOST:8080", "[::1]:6379", "1.2.3.4", "Kelvin \u212a", "update t set x", "drop   table t",
		"dial tcp orders-db:5432: refused", "read tcp 10.0.0.1:4000->redis-primary:6379: reset", "user@db:5432",
		"lookup orders-db on 10.0.0.2:53: no such host", "LOO\u212aUP x: y", "order lookup failed", "lookup a:b", "SELECT\tid\tFROM t",
		"dial tcp [::1]:1: connect: connection refused", "no route to host fd00:10:96::7", "std::string at 10:23:45",
		"connect admin:hunter2@tcp(orders-db:3306)/orders", "host=orders-db user=admin password='a b'",
		"dial unix /var/run/redis/redis.sock: refused", `open C:\data\x.db: denied`, `\\srv\share\f`, "A/B test",
		"Authorization: Bearer sk_1", "PROXY-AUTHORIZATION=basic abc", "x-api-key: k1", "bearer\tabc", "api_key=k token='a b' client_secret=\"c\"", `{"api_key": "k\"1", "GITHUB_TOKEN":9}`, "db_password=x AWS_SECRET_ACCESS_KEY=y", "Password : 'p w'",
		"dial tcp orders_db:5432: refused", "map[api_key:k1]", "{BaseURL:x APIKey:k1}", "client_secret: c", "x-goog-api-key: k", "Invalid api_key: must be 32", "API\u212aEY: x", "unexpected token: EOF", "lookup my_app_redis_1: no such host", "db_1.svc is down",
		"Invalid API key: sk_live_abcdefghijklmnop1234", "AKIAIOSFODNN7EXAMPLE: denied", "sk-learn-compatible-estimators",
		"x509: certificate is valid for *.a.io, [redacted], not b.io", "X509: Certificate is valid for a, not", "x509: certificate is valid for 9 names, but none matched h",
		`candidate authority certificate "A \"B\"`, `DNS name "a.io" is excluded by constraint "io"`, "x509: cannot validate certificate for fd00::7 because",
		"x509: certificate is valid for a., b c, not d.", "x509: certificate is valid for 3 names", `x509: cannot parse dnsName "a."`,
		`URI SAN "s://a" failed`, `URI with IP ("h") cannot`, `cannot parse URI host "a:1:2"`,
		"Cannot connect to host vllm-backend:8000 ssl:default", "Host: api:443", "HOST\tx_1:1", "ghost a:1", "hoſt b:2",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := SanitizeString(s), sanitizeReference(s); got != want {
			t.Fatalf("SanitizeString(%q) = %q, reference %q", s, got, want)
		}
	})
}

func BenchmarkSanitizeString(b *testing.B) {
	for _, s := range []string{"amount exceeds the refundable amount (order A-1042)", "dial tcp 10.0.0.7:5432: connection refused"} {
		b.Run(s[:6], func(b *testing.B) {
			for b.Loop() {
				SanitizeString(s)
			}
		})
		b.Run(s[:6]+"/reference", func(b *testing.B) {
			for b.Loop() {
				sanitizeReference(s)
			}
		})
	}
}
