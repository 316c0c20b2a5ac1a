package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/support"
)

// TestNewRedisClientForSentinelURL: Regression (found in review,
// twenty-fifth session): README "Beyond one machine" runs Redis under
// Sentinel, but ConnectRedis read redis.url with redis.ParseURL only, so a
// worker could not be pointed at the Sentinels and never followed a
// failover. A Sentinel URL (master_name) now gives go-redis's failover
// client with ConnectRedis's settings: no retries unless the URL sets a
// positive max_retries, redis.username and redis.password over the URL's
// username= and password= (the primary's), redis.tls.
func TestNewRedisClientForSentinelURL(t *testing.T) {
	const url = "redis://127.0.0.1:1/2?master_name=mymaster&addr=127.0.0.1:2&username=u&password=urlpw"
	client := func(cfg config.Redis) *redis.Client {
		t.Helper()
		c, err := newRedisClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}

	opts := client(config.Redis{URL: url}).Options()
	if opts.Addr != "FailoverClient" {
		t.Fatalf("a Sentinel redis.url gave a client of %q, not go-redis's failover client", opts.Addr)
	}
	if opts.DB != 2 || opts.Username != "u" || opts.Password != "urlpw" || opts.TLSConfig != nil {
		t.Errorf("failover client: db %d, user %q, password %q, TLS %v: want 2, the URL's u and urlpw, no TLS",
			opts.DB, opts.Username, opts.Password, opts.TLSConfig != nil)
	}
	if c := client(config.Redis{URL: url}); support.MayResend(c) {
		t.Errorf("the failover client retries commands (MaxRetries %d): a script may be applied twice", c.Options().MaxRetries)
	}
	if c := client(config.Redis{URL: url + "&max_retries=0"}); support.MayResend(c) {
		t.Errorf("max_retries=0 gave go-redis's default retries (MaxRetries %d)", c.Options().MaxRetries)
	}
	if c := client(config.Redis{URL: url + "&max_retries=2"}); c.Options().MaxRetries != 2 {
		t.Errorf("an explicit max_retries=2 gave MaxRetries %d", c.Options().MaxRetries)
	}

	opts = client(config.Redis{URL: url, Username: "app", Password: "cfgpw", TLS: config.TLS{Enabled: true}}).Options()
	if opts.Username != "app" || opts.Password != "cfgpw" || opts.TLSConfig == nil {
		t.Errorf("failover client with redis.username, redis.password, redis.tls: user %q, password %q, TLS %v",
			opts.Username, opts.Password, opts.TLSConfig != nil)
	}

	// One server's URL still gives one server's client.
	if opts := client(config.Redis{URL: "redis://127.0.0.1:1/4"}).Options(); opts.Addr != "127.0.0.1:1" || opts.DB != 4 {
		t.Errorf("a plain redis.url gave a client of %q db %d", opts.Addr, opts.DB)
	}
}

// TestStoresIdentityOfSentinelURL: Regression (found in review,
// twenty-fifth session, with the Sentinel form): StoresIdentity names no
// stores ("") for a URL it cannot parse, and it parsed with
// redis.ParseURL only. A Sentinel URL names the stores as a URL of its
// primary does (the db and the prefix; the id kept in Redis tells servers
// apart and follows a failover), whatever Sentinels it lists and in which
// order, so a fleet can move to its Sentinels one worker at a time.
func TestStoresIdentityOfSentinelURL(t *testing.T) {
	id := func(url string) string {
		cfg := config.DefaultWorker()
		cfg.Redis.URL, cfg.Redis.Prefix = url, "af:"
		return StoresIdentity(cfg)
	}
	want := "redis db=2 prefix=af:"
	for _, url := range []string{
		"redis://s1:26379/2?master_name=mymaster&addr=s2:26379&addr=s3:26379",
		"redis://s3:26379/2?master_name=mymaster&addr=s1:26379",
		"redis://s1:26379?master_name=mymaster&db=2",
		"redis://primary:6379/2",
	} {
		if got := id(url); got != want {
			t.Errorf("StoresIdentity(%q) = %q, want %q", url, got, want)
		}
	}
	if got := id("redis://s1:26379/3?master_name=mymaster"); got != "redis db=3 prefix=af:" {
		t.Errorf("StoresIdentity of a Sentinel URL on db 3 = %q", got)
	}
}

// TestConnectRedisSentinelErrors: Regression (found in review, twenty-fifth
// session, with the Sentinel form): a Sentinel URL that can never give a
// primary is bad configuration (ErrBadConfig, exit 2), Sentinels that do
// not answer are not (the worker retries), and neither error holds a
// password (the Sentinels' in the user info, the primary's in password=).
func TestConnectRedisSentinelErrors(t *testing.T) {
	ctx := context.Background()
	_, err := ConnectRedis(ctx, config.Redis{URL: "redis://u:s3ntinelpw@s1:26379/0?master_name=&password=pr1marypw"})
	if !errors.Is(err, ErrBadConfig) {
		t.Errorf("a Sentinel URL without master name: %v, want ErrBadConfig", err)
	}
	noPassword(t, err)

	l, lerr := net.Listen("tcp", "127.0.0.1:0")
	if lerr != nil {
		t.Fatal(lerr)
	}
	addr := l.Addr().String()
	l.Close() // nothing answers there now
	_, err = ConnectRedis(ctx, config.Redis{URL: "redis://u:s3ntinelpw@" + addr + "/0?master_name=mymaster&password=pr1marypw"})
	if err == nil || errors.Is(err, ErrBadConfig) {
		t.Errorf("Sentinels that do not answer: %v, want an error that is not ErrBadConfig", err)
	}
	noPassword(t, err)
}

func noPassword(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, secret := range []string{"s3ntinelpw", "pr1marypw"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q holds the password %q", err, secret)
		}
	}
}

// TestConnectRedisFollowsSentinelFailover: Regression (found in review,
// twenty-fifth session): with a real Sentinel (it runs only where
// redis-sentinel is installed), the client ConnectRedis makes from a
// Sentinel URL writes to the primary, follows a failover to the promoted
// replica, and the stores' id (RedisStoresID, which StoresIdentity's record
// carries) is the same after it.
func TestConnectRedisFollowsSentinelFailover(t *testing.T) {
	sentinelBin, err := exec.LookPath("redis-sentinel")
	if err != nil {
		t.Skip("redis-sentinel is not installed")
	}
	serverBin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed")
	}
	dir := t.TempDir()
	start := func(name, bin string, args ...string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		log, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			log.Close()
		})
	}
	master, replica, sentinel := freeTCPPort(t), freeTCPPort(t), freeTCPPort(t)
	start("master", serverBin, "--port", master, "--save", "", "--appendonly", "no")
	start("replica", serverBin, "--port", replica, "--save", "", "--appendonly", "no", "--replicaof", "127.0.0.1", master)
	conf := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("port %s\ndir %s\nsentinel monitor mymaster 127.0.0.1 %s 1\n"+
		"sentinel down-after-milliseconds mymaster 2000\nsentinel failover-timeout mymaster 10000\n", sentinel, dir, master)), 0o600); err != nil {
		t.Fatal(err)
	}
	start("sentinel", sentinelBin, conf)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sc := redis.NewSentinelClient(&redis.Options{Addr: "127.0.0.1:" + sentinel})
	defer sc.Close()
	waitUntil(ctx, t, "the Sentinel to see the replica", func() bool {
		r, err := sc.Replicas(ctx, "mymaster").Result()
		return err == nil && len(r) == 1 && !strings.Contains(fmt.Sprint(r), "s_down")
	})

	url := "redis://127.0.0.1:" + sentinel + "/0?master_name=mymaster"
	c, err := ConnectRedis(ctx, config.Redis{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id, err := RedisStoresID(ctx, c, "af:")
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(ctx, t, "the replica to hold the stores' id", func() bool {
		r := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + replica})
		defer r.Close()
		got, err := r.Get(ctx, "af:"+StoresIDKey).Result()
		return err == nil && got == id
	})
	if err := sc.Failover(ctx, "mymaster").Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(ctx, t, "the client to write to the promoted replica", func() bool {
		addr, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
		if err != nil || addr[1] != replica {
			return false
		}
		if c.Set(ctx, "af:after-failover", "1", 0).Err() != nil {
			return false
		}
		r := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + replica})
		defer r.Close()
		return r.Get(ctx, "af:after-failover").Val() == "1"
	})
	if got, err := RedisStoresID(ctx, c, "af:"); err != nil || got != id {
		t.Errorf("the stores' id after the failover: %q, %v; want %q", got, err, id)
	}
}

func freeTCPPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

func waitUntil(ctx context.Context, t *testing.T, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
