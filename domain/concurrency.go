package domain

import "fmt"

// WhenFull says what a tick does when its schedule's max_concurrent runs are in flight:
// wait in the buffer (BUFFERED, with the reason) or be recorded SKIPPED with the reason.
type WhenFull string

// Values of overlap_when_full.
const (
	WhenFullBuffer WhenFull = "buffer"
	WhenFullSkip   WhenFull = "skip"
)

// MaxConcurrentLimit is the largest concurrency cap a schedule may have.
const MaxConcurrentLimit = 1000

// CheckConcurrency judges a schedule's concurrency cap — max_concurrent (nil: none) and
// overlap_when_full ("": buffer) — under its overlap policy and action, and answers the
// overlap_when_full to keep ("" when there is no cap). The cap applies to overlap allow_all
// only: every other policy runs one run at a time already (a tick waits, is skipped, or stops
// the running one). And to a workflow action: an event action's run ends as it fires. The
// FieldError names max_concurrent or overlap_when_full, relative to the policies.
func CheckConcurrency(maxConcurrent *int, whenFull WhenFull, overlap Overlap, action ActionKind) (WhenFull, error) {
	if whenFull != "" && whenFull != WhenFullBuffer && whenFull != WhenFullSkip {
		return "", &FieldError{Field: "overlap_when_full", Msg: fmt.Sprintf("must be buffer or skip; got %q", whenFull)}
	}
	if maxConcurrent == nil {
		if whenFull != "" {
			return "", &FieldError{Field: "overlap_when_full", Msg: "applies only with max_concurrent"}
		}
		return "", nil
	}
	n := *maxConcurrent
	switch {
	case n < 1 || n > MaxConcurrentLimit:
		return "", &FieldError{Field: "max_concurrent", Msg: fmt.Sprintf("must be from 1 to %d; got %d", MaxConcurrentLimit, n)}
	case overlap != OverlapAllowAll:
		return "", &FieldError{Field: "max_concurrent", Msg: fmt.Sprintf(
			"applies to overlap allow_all only (under %s runs never overlap); got overlap %q", overlap, overlap)}
	case action != ActionWorkflow && action != ActionHTTP:
		return "", &FieldError{Field: "max_concurrent", Msg: "applies to a workflow or http action only (an event action's run ends as it fires)"}
	}
	if whenFull == "" {
		whenFull = WhenFullBuffer
	}
	return whenFull, nil
}
