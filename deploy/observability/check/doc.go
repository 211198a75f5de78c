// Package check proves tickgate's shipped alert rules and Grafana dashboard
// (deploy/observability) against a live tickgate: every expression parses with Prometheus's
// own parser, names only series tickgate's /metrics serves, and an alert fires when its
// condition is made true. It is a module of its own so that Prometheus's dependencies stay
// out of tickgate's go.mod; `make test` runs it (make test-observability).
package check
