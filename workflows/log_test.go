package workflows_test

import (
	"log/slog"
	"os"

	"go.temporal.io/sdk/log"
)

// testLogger keeps the test environment's debug chatter out of test output.
func testLogger() log.Logger {
	return log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}
