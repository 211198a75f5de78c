package api_test

import (
	"testing"

	"github.com/tickgate/tickgate/internal/testing/testenv"
)

// TestMain stops the package's Temporal dev server after the end-to-end tests.
func TestMain(m *testing.M) { testenv.Main(m) }
