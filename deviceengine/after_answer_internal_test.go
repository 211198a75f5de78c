package deviceengine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDrainWaitsForCallsAfterAnswers: a call started after an answer keeps Drain waiting
// until it is done, and a Drain whose context ends first says so.
func TestDrainWaitsForCallsAfterAnswers(t *testing.T) {
	s := &Engine{}
	release := make(chan struct{})
	var finished atomic.Bool
	s.afterAnswer(time.Minute, func(ctx context.Context) {
		<-release
		finished.Store(ctx.Err() == nil)
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, s.Drain(ctx), context.Canceled, "the call is still running")
	close(release)
	require.NoError(t, s.Drain(context.Background()))
	require.True(t, finished.Load(), "Drain returned only after the call ended, its context still live")
}
