//go:build tools

// Package temporal pins the Temporal CLI (dev server + Web UI) and, at the version that CLI
// embeds, the real Temporal server and its SQL schema tool, in a module of their own, so the
// server's dependencies stay out of tickgate's go.mod.
package temporal

import (
	_ "github.com/temporalio/cli/cmd/temporal"
	_ "github.com/temporalio/ui-server/v2/cmd/server"
	_ "go.temporal.io/server/cmd/server"
	_ "go.temporal.io/server/cmd/tools/sql"
)
