// Package config loads the worker's and the replayer's configuration:
// defaults, then a YAML file (configs/worker.yaml documents every key), then
// AGENTFLEET_* environment variables, then command-line flags. Secrets are
// never logged: Redacted returns a copy safe to print.
package config
