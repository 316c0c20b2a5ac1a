package config

import (
	"strings"
	"testing"
)

// Regression (found in review, twentieth session): Kubernetes
// (enableServiceLinks, on by default) gives every pod of a namespace the
// docker-link variables of every Service in it. A Service named after the
// project ("agentfleet": the workers' /metrics Service, say) puts these in
// every worker's and replayer's environment: none of them is a typo of a
// key, and no key of the project can have these names. CheckEnv refused
// them, so every worker of such a namespace exited 2 at start (a crash
// loop) once that Service existed. They pass now, without a warning.
func TestCheckEnvAcceptsKubernetesServiceLinks(t *testing.T) {
	env := []string{
		"AGENTFLEET_SERVICE_HOST=10.96.0.12",
		"AGENTFLEET_SERVICE_PORT=9090",
		"AGENTFLEET_SERVICE_PORT_METRICS=9090",
		"AGENTFLEET_PORT=tcp://10.96.0.12:9090",
		"AGENTFLEET_PORT_9090_TCP=tcp://10.96.0.12:9090",
		"AGENTFLEET_PORT_9090_TCP_PROTO=tcp",
		"AGENTFLEET_PORT_9090_TCP_PORT=9090",
		"AGENTFLEET_PORT_9090_TCP_ADDR=10.96.0.12",
		"AGENTFLEET_NATS_URL=nats://agentfleet-nats:4222",
		// Services "agentfleet-nats" and "agentfleet-redis", the natural
		// names of the fleet's own servers: CheckEnv suggested
		// AGENTFLEET_NATS_URL / AGENTFLEET_REDIS_URL for some of them.
		"AGENTFLEET_NATS_SERVICE_HOST=10.96.0.13",
		"AGENTFLEET_NATS_SERVICE_PORT=4222",
		"AGENTFLEET_NATS_PORT=tcp://10.96.0.13:4222",
		"AGENTFLEET_NATS_PORT_4222_TCP_ADDR=10.96.0.13",
		"AGENTFLEET_REDIS_SERVICE_HOST=10.96.0.14",
		"AGENTFLEET_REDIS_PORT=tcp://10.96.0.14:6379",
		"AGENTFLEET_REDIS_PORT_6379_TCP=tcp://10.96.0.14:6379",
		// A Service "agentfleet-embeded" (sic): its variables are
		// Kubernetes', although AGENTFLEET_EMBEDED_PORT misspells a key.
		"AGENTFLEET_EMBEDED_SERVICE_HOST=10.96.0.15",
		"AGENTFLEET_EMBEDED_PORT=tcp://10.96.0.15:4223",
	}
	warnings, err := CheckEnv(env)
	if err != nil {
		t.Fatalf("CheckEnv refuses the variables Kubernetes sets for a Service named agentfleet:\n%v", err)
	}
	if len(warnings) != 0 {
		t.Errorf("CheckEnv warns about the variables Kubernetes sets for a Service:\n%s", strings.Join(warnings, "\n"))
	}
}

// A key of the project with a service-link shape stays a key, and a typo
// of one with that shape is refused when no Service explains it (no
// <svc>_SERVICE_HOST, which Kubernetes sets with every other variable).
func TestCheckEnvServiceLinkShapedKeyAndTypo(t *testing.T) {
	if _, ok := IsServiceLinkEnv("AGENTFLEET_EMBEDDED_PORT"); !ok {
		t.Fatal("AGENTFLEET_EMBEDDED_PORT does not have a service-link shape: the test checks nothing")
	}
	if w, err := CheckEnv([]string{"AGENTFLEET_EMBEDDED_PORT=4223"}); err != nil || len(w) != 0 {
		t.Fatalf("AGENTFLEET_EMBEDDED_PORT: warnings %q, error %v", w, err)
	}
	_, err := CheckEnv([]string{"AGENTFLEET_EMBEDED_PORT=4223"})
	if err == nil || !strings.Contains(err.Error(), "AGENTFLEET_EMBEDED_PORT: did you mean AGENTFLEET_EMBEDDED_PORT?") {
		t.Fatalf("AGENTFLEET_EMBEDED_PORT without a Service: %v, want refused as a typo of AGENTFLEET_EMBEDDED_PORT", err)
	}
	for _, name := range []string{"AGENTFLEET_NATS_URL", "AGENTFLEET_PORTAL", "AGENTFLEET_PORT_X_TCP", "AGENTFLEET_SERVICE_HOSTS", "AGENTFLEET_PORT_9090_TCP_HOST"} {
		if _, ok := IsServiceLinkEnv(name); ok {
			t.Errorf("%s taken for a Kubernetes service link", name)
		}
	}
}
