package api

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/workflows"
)

// A command the workflow refuses after the API's own checks passed (the schedule was paused
// or resumed in between) is answered as a problem naming the field, never a 500.
func TestWorkflowRefusalsOfScheduleCommandsAreProblems(t *testing.T) {
	s := &Server{}
	cases := map[string]struct {
		field  string
		kind   string
		status int
	}{
		"paused":      {"paused", workflows.ErrCommandConflict, http.StatusConflict},
		"next_run_at": {"next_run_at", workflows.ErrBadCommand, http.StatusBadRequest},
		"end":         {"end", workflows.ErrBackfillTooLarge, http.StatusBadRequest},
		"start":       {"start", workflows.ErrBackfillEmpty, http.StatusUnprocessableEntity},
	}
	for name, c := range cases {
		refusal := temporal.NewApplicationError("refused", c.kind, c.field)
		err := s.scheduleCommandError("nightly", fmt.Errorf("update schedule: %w", refusal))
		var p *Problem
		require.True(t, errors.As(err, &p), name)
		require.Equal(t, c.status, p.Status, name)
		require.Equal(t, c.field, p.Field, name)
		require.Contains(t, p.Detail, "refused", name)
	}
	other := errors.New("boom")
	require.Same(t, other, s.scheduleCommandError("nightly", other), "other errors pass through unchanged")
}
