package config_test

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentfleet/agentfleet/internal/config"
)

// FuzzLoadWorker: a configuration file and an AGENTFLEET_* variable of any
// content never panic the loader; it returns an error or a configuration
// that validates, the same one on every load, and whose Redacted form
// keeps no Redis password field.
func FuzzLoadWorker(f *testing.F) {
	f.Add([]byte("nats:\n  url: nats://x\n"), uint8(0), "")
	f.Add([]byte("worker:\n  concurrency: -3\n"), uint8(3), "7")
	f.Add([]byte("redis:\n  url: redis://u:pw@h:6379/0\n  password: s3cret\n"), uint8(9), "1m")
	f.Add([]byte("streams:\n  dlq_max_age: 720h\n"), uint8(20), "yes")
	f.Add([]byte("model:\n  spec: sim\n  sim:\n    faults: server=0.5\n"), uint8(40), "rate_limited=2")
	f.Add([]byte("{unknown: 1}"), uint8(1), "nats://tok@h")
	f.Add([]byte("- a\n- b\n"), uint8(2), "1e400")
	f.Add([]byte("worker: &a {name: *a}\n"), uint8(5), "-0")
	names := func() []string { c := config.DefaultWorker(); return config.EnvNames(&c) }()
	path := filepath.Join(f.TempDir(), "w.yaml")
	f.Fuzz(func(t *testing.T, file []byte, envIdx uint8, envVal string) {
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		env := names[int(envIdx)%len(names)]
		lookup := func(k string) (string, bool) {
			if k == env {
				return envVal, true
			}
			return "", false
		}
		load := func() (config.Worker, error) {
			return config.LoadWorker([]string{"--config", path}, lookup, io.Discard)
		}
		c, err := load()
		c2, err2 := load()
		if (err == nil) != (err2 == nil) || (err == nil && !reflect.DeepEqual(c, c2)) {
			t.Fatalf("two loads differ: %v / %v", err, err2)
		}
		if err != nil {
			return
		}
		if verr := c.Validate(); verr != nil {
			t.Fatalf("loaded a configuration that does not validate: %v", verr)
		}
		if pw := c.Redis.Password; pw != "" && pw != "REDACTED" {
			if r := c.Redacted(); r.Redis.Password == pw {
				t.Fatalf("Redacted keeps the password: %+v", r.Redis)
			}
		}
	})
}
