package loadgen

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/redistest"
)

// Regression (found in review, twentieth session): the load generator puts the --nats-url and
// --redis-url it was given into its report as they are: the table's header
// line on stdout and the "nats" / "redis" fields of the --out JSON file (a
// benchmark file meant to be kept and shared). Pointed at a fleet's servers
// with credentials in the URLs (redis://:pass@host, nats://user:pass@host),
// it writes both passwords out. Every other command prints URLs through
// config.RedactURL.
func TestReportRedactsServerURLs(t *testing.T) {
	const natsPass, redisPass = "n4tsS3cret", "r3disS3cret"
	e := &env{natsURL: "nats://alice:" + natsPass + "@10.0.0.7:4222", redisURL: "redis://app:" + redisPass + "@10.0.0.8:6379/0"}
	rep := newReport(Config{N: 1, Workers: 1, Concurrency: 1, Window: 1}, e)
	var table bytes.Buffer
	rep.Print(&table)
	path := filepath.Join(t.TempDir(), "bench.json")
	if err := rep.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for where, text := range map[string]string{"table (stdout)": table.String(), "--out JSON": string(js)} {
		for _, secret := range []string{natsPass, redisPass} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s holds the password %q of a server URL:\n%s", where, secret, firstLines(text, 4))
			}
		}
	}
}

// Regression (found in review, twentieth session): openEnv wraps nats.Connect's error as it is, and
// for a URL that does not parse (a '%' or '/' in the password) that error
// quotes the whole URL, password included: "loadgen: connect
// nats://REDACTED@host:4222: parse "nats://alice:s3cr%zzet@host:4222":
// invalid URL escape". The worker and the producer pass it through
// config.RedactConnectError.
func TestOpenEnvConnectErrorRedactsPassword(t *testing.T) {
	const secret = "s3cr%zzet"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := openEnv(ctx, Config{NATSURL: "nats://alice:" + secret + "@127.0.0.1:4222", RedisURL: redistest.URL()})
	if err == nil {
		t.Fatal("openEnv connected with a URL that does not parse")
	}
	if strings.Contains(err.Error(), "s3cr") {
		t.Errorf("the error prints the NATS password: %v", err)
	}
}

// Regression (found in review, twentieth session): a NATS or Redis URL
// that can never connect is a usage error of Validate (cmd/loadgen exits
// 2, as on a bad flag), not a failure of the run, and the error does not
// print the password; with --embedded the URLs are not used and not
// checked.
func TestValidateRefusesBadServerURLs(t *testing.T) {
	const secret = "s3cr%zzet"
	for name, cfg := range map[string]Config{
		"nats":  {NATSURL: "nats://alice:" + secret + "@127.0.0.1:4222"},
		"redis": {RedisURL: "redis://app:" + secret + "@127.0.0.1:6379/0"},
		"port":  {NATSURL: "nats://127.0.0.1:99999"},
	} {
		err := cfg.WithDefaults().Validate()
		if err == nil {
			t.Errorf("%s: Validate accepted %q / %q", name, cfg.NATSURL, cfg.RedisURL)
			continue
		}
		if strings.Contains(err.Error(), "s3cr") {
			t.Errorf("%s: the error prints the password: %v", name, err)
		}
		cfg.Embedded = true
		if err := cfg.WithDefaults().Validate(); err != nil {
			t.Errorf("%s: with --embedded (URLs unused) Validate = %v", name, err)
		}
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
