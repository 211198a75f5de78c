package main

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/serviceerror"
)

// retryTransient retries f while Temporal answers with an error that says "not now" (the
// server busy, its namespace cache not refreshed yet, a deadline) — what an overloaded dev
// server answers a setup call. Set-up only: it never touches what is measured.
func retryTransient(ctx context.Context, f func() error) error {
	wait := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || attempt == 6 || !transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

func transient(err error) bool {
	var unavailable *serviceerror.Unavailable
	var nsNotFound *serviceerror.NamespaceNotFound
	var deadline *serviceerror.DeadlineExceeded
	var exhausted *serviceerror.ResourceExhausted
	return errors.As(err, &unavailable) || errors.As(err, &nsNotFound) || errors.As(err, &deadline) ||
		errors.As(err, &exhausted) || errors.Is(err, context.DeadlineExceeded)
}
