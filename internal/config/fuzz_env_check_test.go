package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/config"
)

// FuzzCheckEnv feeds CheckEnv environments of outside origin (a pod's, a
// shell's): it never panics; a known name is never refused nor warned
// about, whatever sits next to it; a refusal matches ErrUnknownEnv and
// never quotes a value.
func FuzzCheckEnv(f *testing.F) {
	for _, s := range []string{
		"AGENTFLEET_NATSURL=nats://x", "AGENTFLEET_SERVICE_HOST=10.0.0.1", "AGENTFLEET_PORT_9090_TCP_ADDR=10.0.0.1",
		"AGENTFLEET_VERSION=1", "AGENTFLEET_=", "AGENTFLEET", "=AGENTFLEET_X", "AGENTFLEET_EMBEDED_PORT=4222",
		"agentfleet_nats_url=x", "PATH=/bin",
	} {
		f.Add(s, "s3cr3t-value")
	}
	known := config.KnownEnvNames()
	f.Fuzz(func(t *testing.T, entry, value string) {
		env := []string{entry, known[len(entry)%len(known)] + "=" + value}
		if i := strings.IndexByte(entry, '='); i < 0 {
			env[0] = entry + "=" + value
		}
		warnings, err := config.CheckEnv(env)
		name := env[1][:strings.IndexByte(env[1], '=')]
		for _, w := range warnings {
			if quotes(env[0], value, w) {
				t.Fatalf("CheckEnv(%q) warning quotes a value: %q", env, w)
			}
			if strings.Contains(w, name+" ") && !strings.Contains(env[0], name) {
				t.Fatalf("known name %s warned about: %q", name, w)
			}
		}
		if err != nil {
			if !errors.Is(err, config.ErrUnknownEnv) {
				t.Fatalf("CheckEnv(%q) = %v: does not match ErrUnknownEnv", env, err)
			}
			if quotes(env[0], value, err.Error()) {
				t.Fatalf("CheckEnv(%q) error quotes a value: %v", env, err)
			}
		}
	})
}

// quotes reports whether text holds value (6 bytes or more) where neither
// the fuzzed entry's name nor a known name could have put it.
func quotes(entry, value, text string) bool {
	if len(value) < 6 || !strings.Contains(text, value) {
		return false
	}
	name, _, _ := strings.Cut(entry, "=")
	if strings.Contains(name, value) {
		return false
	}
	for _, k := range config.KnownEnvNames() {
		if strings.Contains(k, value) {
			return false
		}
	}
	return !strings.Contains("unknown environment variable did you mean warning", value)
}
