//go:build tools

// Package staticcheck pins staticcheck, the linter that make lint (and so make test) runs.
package staticcheck

import _ "honnef.co/go/tools/cmd/staticcheck"
