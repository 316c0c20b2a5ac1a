// Package app wires the fleet's parts from configuration: connections (NATS
// with credentials and TLS, an embedded nats-server, Redis), the stores
// (Redis or NATS KV), the model chain (provider → fleet cooldown → the one
// retry layer), the shipped agents, and the HTTP endpoints for metrics and
// health. cmd/* mains stay thin: flags and signals, then a call into here.
package app
