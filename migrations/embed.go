// Package migrations holds tickgate's schema as numbered goose SQL files, embedded into the
// binary and applied by `tickgate migrate` and at worker and API start.
package migrations

import "embed"

// FS is the embedded migrations directory.
//
//go:embed *.sql
var FS embed.FS
