// Package e2e runs tickgate as separate processes against the real Temporal dev server and
// PostgreSQL that the test harness starts.
package e2e

import (
	"testing"

	"github.com/tickgate/tickgate/internal/testing/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
