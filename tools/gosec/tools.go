//go:build tools

// Package gosec pins gosec, the security linter that make lint (and so make test) runs.
package gosec

import _ "github.com/securego/gosec/v2/cmd/gosec"
