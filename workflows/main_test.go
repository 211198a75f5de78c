package workflows_test

import (
	"testing"

	"github.com/tickgate/tickgate/internal/testing/testenv"
)

// TestMain stops the Temporal dev server a test started (testenv.TemporalClient), if any.
func TestMain(m *testing.M) { testenv.Main(m) }
