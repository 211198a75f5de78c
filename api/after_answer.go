package api

import (
	"context"
	"fmt"
	"time"
)

// afterAnswer runs f off the request path: a Temporal call made after a commit (telling a PC
// timer a wake-up, signalling a result, nudging the dispatcher) that the agent or operator
// must not wait for, since SQL already holds the truth. Its context outlives the request,
// bounded by timeout; Drain waits for every such call before the process lets go of its
// connections.
func (s *Server) afterAnswer(timeout time.Duration, f func(ctx context.Context)) {
	s.afterAnswers.Add(1)
	go func() {
		defer s.afterAnswers.Done()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		f(ctx)
	}()
}

// Drain waits until the calls started after answers are done, or ctx ends. Call it once
// the HTTP server stopped taking requests.
func (s *Server) Drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.afterAnswers.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("api: calls after answers still running: %w", ctx.Err())
	}
}
