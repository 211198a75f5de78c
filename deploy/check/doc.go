// Package check renders tickgate's Kubernetes manifests (deploy/) with kustomize's Go
// library and validates the objects as Kubernetes API types. It is a module of its own so
// that kustomize and the Kubernetes API packages stay out of tickgate's go.mod; `make
// test` runs it (make test-deploy).
package check
