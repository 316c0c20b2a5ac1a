package config

import (
	"flag"
	"fmt"
	"io"
)

// LoadWorker builds the worker's configuration from defaults, the YAML file
// named by --config (or AGENTFLEET_CONFIG), AGENTFLEET_* variables and the
// flags in args, in that order. With no NATS URL anywhere, embedded mode is
// switched on. The result is validated.
func LoadWorker(args []string, lookup func(string) (string, bool), stderr io.Writer) (Worker, error) {
	c := DefaultWorker()
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "YAML configuration file (configs/worker.yaml documents every key); env AGENTFLEET_CONFIG")
	natsURL := fs.String("nats-url", "", "NATS server URL; empty runs an embedded server (nats.url)")
	redisURL := fs.String("redis-url", "", "Redis URL; empty uses NATS KV stores (redis.url)")
	modelSpec := fs.String("model", "", "sim | gemini:<model> | openai:<model> (model.spec)")
	concurrency := fs.Int("concurrency", 0, "invocations run at once (worker.concurrency)")
	metricsAddr := fs.String("metrics-addr", "", "address for /metrics, /healthz, /readyz (metrics_addr)")
	embedded := fs.Bool("embedded", false, "run an in-process NATS server with JetStream (embedded.enabled)")
	dataDir := fs.String("data-dir", "", "embedded mode storage directory (embedded.data_dir)")
	openaiBase := fs.String("openai-base-url", "", "OpenAI-compatible base URL, e.g. Ollama or vLLM (model.openai_base_url)")
	simFaults := fs.String("sim-faults", "", "simulated provider faults, e.g. rate_limited=0.2,server=0.2 (model.sim.faults)")
	logLevel := fs.String("log-level", "", "debug | info | warn | error (log_level)")
	name := fs.String("name", "", "worker name in logs and DLQ entries (worker.name)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if *path == "" {
		if p, ok := lookup(EnvPrefix + "CONFIG"); ok {
			*path = p
		}
	}
	if *path != "" {
		if err := LoadFile(*path, &c); err != nil {
			return c, err
		}
	}
	if _, err := ApplyEnv(&c, lookup); err != nil {
		return c, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["nats-url"] {
		c.NATS.URL = *natsURL
	}
	if set["redis-url"] {
		c.Redis.URL = *redisURL
	}
	if set["model"] {
		c.Model.Spec = *modelSpec
	}
	if set["concurrency"] {
		c.Worker.Concurrency = *concurrency
	}
	if set["metrics-addr"] {
		c.MetricsAddr = *metricsAddr
	}
	if set["embedded"] {
		c.Embedded.Enabled = *embedded
	}
	if set["data-dir"] {
		c.Embedded.DataDir = *dataDir
	}
	if set["openai-base-url"] {
		c.Model.OpenAIBaseURL = *openaiBase
	}
	if set["sim-faults"] {
		c.Model.Sim.Faults = *simFaults
	}
	if set["log-level"] {
		c.LogLevel = *logLevel
	}
	if set["name"] {
		c.Worker.Name = *name
	}
	if c.NATS.URL == "" {
		c.Embedded.Enabled = true
	}
	if c.Worker.Name == "" {
		// configs/worker.yaml shows the key as name: "" (its default):
		// empty means the default, hostname-pid.
		c.Worker.Name = DefaultWorker().Worker.Name
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("config: unexpected arguments %v", fs.Args())
	}
	return c, c.Validate()
}
