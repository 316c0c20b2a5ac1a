package app_test

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/redistest"
)

// A worker started while NATS is down waits for it.
func TestConnectNATSWithRetryWaitsForTheServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := app.ConnectNATSWithRetry(ctx, config.NATS{URL: "nats://127.0.0.1:" + strconv.Itoa(port)}, "t", zerolog.Nop())
		if err == nil {
			nc.Close()
		}
		done <- result{err}
	}()
	time.Sleep(700 * time.Millisecond) // let the first attempts fail
	select {
	case r := <-done:
		t.Fatalf("returned before the server existed: %v", r.err)
	default:
	}
	natstest.RunServerAt(t, t.TempDir(), port)
	if r := <-done; r.err != nil {
		t.Fatal(r.err)
	}
}

func TestConnectNATSWithRetryGivesUpWithContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := app.ConnectNATSWithRetry(ctx, config.NATS{URL: "nats://127.0.0.1:1"}, "t", zerolog.Nop()); err == nil {
		t.Fatal("connected to a closed port")
	}
}

// A write whose reply is lost (the connection resets after Redis applied
// it) is applied once: the client ConnectRedis returns does not send it
// again, as go-redis's default would after the EOF (a refund booking or an
// appended event must not be applied twice). A plain RPUSH keeps the test
// free of scripts, which another package's test may flush.
func TestConnectRedisDoesNotRepeatAWriteWhoseReplyWasLost(t *testing.T) {
	direct, prefix := redistest.Client(t)
	p := redistest.NewReplyDropper(t, direct.Options().Addr, "lost-reply-write")
	for _, u := range []string{"", "?max_retries=0"} { // 0 means none, not go-redis's default 3
		rdb, err := app.ConnectRedis(context.Background(), config.Redis{URL: "redis://" + p.Addr() + "/" + strconv.Itoa(direct.Options().DB) + u})
		if err != nil {
			t.Fatal(err)
		}
		// go-redis stores "no retries" (-1 given) as 0 once the client is
		// built, and its default as 3.
		if rdb.Options().MaxRetries != 0 {
			t.Errorf("URL suffix %q: MaxRetries = %d, want none (0 after go-redis's init)", u, rdb.Options().MaxRetries)
		}
		rdb.Close()
	}
	rdb, err := app.ConnectRedis(context.Background(), config.Redis{URL: "redis://" + p.Addr() + "/" + strconv.Itoa(direct.Options().DB)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	key := prefix + "writes"
	err = rdb.RPush(context.Background(), key, "lost-reply-write").Err()
	if err == nil || !p.Dropped() {
		t.Fatalf("RPUSH = %v, dropped %v; want the lost reply's error", err, p.Dropped())
	}
	if n := direct.LLen(context.Background(), key).Val(); n != 1 {
		t.Fatalf("the write was applied %d times, want 1", n)
	}
	withRetries, err := app.ConnectRedis(context.Background(), config.Redis{URL: "redis://" + direct.Options().Addr + "/" + strconv.Itoa(direct.Options().DB) + "?max_retries=2"})
	if err != nil {
		t.Fatal(err)
	}
	defer withRetries.Close()
	if withRetries.Options().MaxRetries != 2 {
		t.Fatalf("an explicit max_retries=2 became %d", withRetries.Options().MaxRetries)
	}
}

// A URL with a typo must not print its password: url.Parse quotes the whole
// URL in its error.
func TestConnectErrorsRedactAnUnparseableURL(t *testing.T) {
	ctx := context.Background()
	_, err := app.ConnectRedis(ctx, config.Redis{URL: "redis://:s3cr%et@127.0.0.1:6379/0"})
	if err == nil || strings.Contains(err.Error(), "s3cr") {
		t.Fatalf("ConnectRedis: %v, want an error without the password", err)
	}
	_, err = app.ConnectNATS(config.NATS{URL: "nats://user:s3cret@127.0.0.1:42x2"}, "test", zerolog.Nop())
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("ConnectNATS: %v, want an error without the password", err)
	}
}

// A NATS URL with a user and no password carries an auth token: nats.go
// sends the user part as the CONNECT token (connectProto: "if no password,
// assume username is authToken"). config.RedactURL hides it like a
// password, so neither the worker's "connecting to NATS" log line nor
// ConnectNATS's error (log pipelines, crash reports) shows it.
func TestNATSTokenInURLIsNotLogged(t *testing.T) {
	const token = "s3cr3t-nats-token"
	// The user part of the URL really is the credential.
	s := tokenServer(t, token)
	addr := s.Addr().String()
	if nc, err := nats.Connect("nats://" + token + "@" + addr); err != nil {
		t.Fatalf("token in the URL should authenticate: %v", err)
	} else {
		nc.Close()
	}
	if nc, err := nats.Connect("nats://" + addr); err == nil {
		nc.Close()
		t.Fatal("server accepts connections without the token")
	}

	// A port nobody listens on: the connection fails and the error is built.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	url := "nats://" + token + "@" + closed

	if red := config.RedactURL(url); strings.Contains(red, token) {
		t.Errorf("RedactURL(%q) = %q: the token is kept", url, red)
	}
	_, err = app.ConnectNATS(config.NATS{URL: url}, "t", zerolog.Nop())
	if err == nil {
		t.Fatal("connected to a closed port")
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("ConnectNATS error shows the token: %v", err)
	}

	var logs bytes.Buffer
	cfg := config.DefaultWorker()
	cfg.NATS.URL = url
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Connect logs, tries once, and gives up
	if _, err := app.Connect(ctx, cfg, zerolog.New(&logs)); err == nil {
		t.Fatal("Connect succeeded")
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("worker log shows the token:\n%s", logs.String())
	}
}

// tokenServer starts a NATS server that requires token (CONNECT auth
// token) on a loopback port of its own.
func tokenServer(t *testing.T, token string) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, Authorization: token, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10e9) {
		t.Fatal("server not ready")
	}
	t.Cleanup(s.Shutdown)
	return s
}
