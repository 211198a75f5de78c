//go:build tools

// Package sqlc pins sqlc, which types store/queries/*.sql into store/db (make generate).
package sqlc

import _ "github.com/sqlc-dev/sqlc/cmd/sqlc"
