package activities_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/activities"
)

// A batch waits out a database that cannot be reached instead of failing the write (and,
// after Temporal's few retries, its tasks): the write is tried again until it goes through;
// any other error, or an outage longer than OutageWait, is returned.
func TestBatchWritesWaitOutADatabaseOutage(t *testing.T) {
	ctx := context.Background()
	refused := fmt.Errorf("finish 2 tasks: dial: %w", syscall.ECONNREFUSED)
	calls := 0
	n, err := activities.WaitOutOutage(ctx, func() (int, error) {
		calls++
		if calls < 3 {
			return 0, refused
		}
		return 2, nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, 3, calls, "tried again while the database was unreachable")

	calls = 0
	bad := errors.New("syntax error at or near SELEC")
	_, err = activities.WaitOutOutage(ctx, func() (int, error) { calls++; return 0, bad })
	require.ErrorIs(t, err, bad)
	require.Equal(t, 1, calls, "any other error at once")

	saved := activities.OutageWait
	activities.OutageWait = 300 * time.Millisecond
	t.Cleanup(func() { activities.OutageWait = saved })
	_, err = activities.WaitOutOutage(ctx, func() (int, error) { return 0, refused })
	require.ErrorIs(t, err, syscall.ECONNREFUSED, "an outage longer than OutageWait is the batch's error")
}
