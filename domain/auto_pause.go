package domain

import (
	"fmt"
	"strings"
	"time"

	"github.com/tickgate/tickgate/internal/schedulespec"
)

// AutoPause pauses an http action's schedule whose endpoint keeps failing (docs/schedules.md
// "Endpoints that fail"): after AfterFailures runs in a row ended FAILED (the dead letter),
// or once runs have failed without a success for OrAfter — whichever comes first. A resume
// starts the count again.
type AutoPause struct {
	AfterFailures int                   `json:"after_failures,omitempty"`
	OrAfter       schedulespec.Duration `json:"or_after,omitempty"`
}

// Bounds of an auto-pause rule.
const (
	MaxAutoPauseFailures = 10000
	MinAutoPauseAfter    = time.Minute
	MaxAutoPauseAfter    = 90 * 24 * time.Hour
)

// maxReasonError bounds the part of the newest failure a reason quotes (the reason is the
// pause's note, at most 1,000 bytes).
const maxReasonError = 400

// AutoPauseIdentity is who an automatic pause comes from, in the schedule's history and its
// pause command.
const AutoPauseIdentity = "tickgate auto_pause"

func (p AutoPause) check() error {
	if p.AfterFailures == 0 && p.OrAfter == 0 {
		return &FieldError{Field: "auto_pause", Msg: "give after_failures, or_after or both"}
	}
	if p.AfterFailures < 0 || p.AfterFailures > MaxAutoPauseFailures {
		return &FieldError{Field: "auto_pause.after_failures", Msg: fmt.Sprintf("want 1 to %d failed runs in a row, got %d", MaxAutoPauseFailures, p.AfterFailures)}
	}
	if d := time.Duration(p.OrAfter); d != 0 && (d < MinAutoPauseAfter || d > MaxAutoPauseAfter) {
		return &FieldError{Field: "auto_pause.or_after", Msg: fmt.Sprintf("want a duration from %s to %s such as \"72h\", got %s", MinAutoPauseAfter, MaxAutoPauseAfter, d)}
	}
	return nil
}

// Due says whether a schedule whose last streak runs ended FAILED, the first of them at
// since, pauses itself at now, and why (lastError is the newest failure's error).
func (p AutoPause) Due(streak int, since, now time.Time, lastError string) (string, bool) {
	last := ""
	if lastError != "" {
		if len(lastError) > maxReasonError {
			lastError = strings.ToValidUTF8(lastError[:maxReasonError], "") + "…"
		}
		last = "; the last: " + lastError
	}
	switch {
	case streak <= 0:
		return "", false
	case p.AfterFailures > 0 && streak >= p.AfterFailures:
		return fmt.Sprintf("paused itself after %d failed runs in a row (auto_pause.after_failures %d)%s", streak, p.AfterFailures, last), true
	case p.OrAfter > 0 && now.Sub(since) >= time.Duration(p.OrAfter):
		return fmt.Sprintf("paused itself: its runs have failed without a success since %s (auto_pause.or_after %s; %d failed runs)%s",
			since.UTC().Format(time.RFC3339), time.Duration(p.OrAfter), streak, last), true
	}
	return "", false
}
