// Package opsconfig checks the operations files shipped in configs/: the
// Grafana dashboard (configs/grafana/*.json) and the Prometheus alerting
// rules (configs/prometheus/alerts.yaml).
//
// Its test decodes both files, checks every PromQL expression with a strict
// structural checker (ParseExpr: balanced brackets, label matchers, range
// and subquery durations, known functions and aggregations, operator and
// operand order), and compares every metric and label name the expressions
// use with the metrics the code registers, gathered from a registry built
// with the packages' own NewMetrics. A dashboard or alert that names a metric
// or a class the code does not export fails the build.
//
// The full Prometheus parser (github.com/prometheus/prometheus/promql/parser)
// is not used on purpose: its module pulls in the Prometheus server's
// dependency tree, far too heavy for a config check.
package opsconfig
