//go:build tools

// Package temporal pins the Temporal CLI (dev server + Web UI) in a module of its own,
// so the server's dependencies stay out of tickgate's go.mod.
package temporal

import _ "github.com/temporalio/cli/cmd/temporal"
