package scheduleplan

import (
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
)

// ArmedTick is a fire the planner armed and no release has made true yet, as a calendar
// edit judges it again: an event fire (SUCCEEDED at its release), or a tick armed SKIPPED
// because a calendar excluded it.
type ArmedTick struct {
	Tick   time.Time
	Status domain.RunStatus
	Reason string
}

// Rejudge is what an armed tick is under its schedule's calendars as they now stand:
// skipReason is the reason it is SKIPPED with ("" when it fires), and changed whether that
// differs from what it was armed as. An edit of a calendar makes every armed tick what the
// calendars now say before any is released (store.EditCalendar).
func Rejudge(t ArmedTick, cals schedulespec.Calendars) (skipReason string, changed bool) {
	if name := cals.ExcludedBy(t.Tick); name != "" {
		skipReason = schedulespec.ExclusionReason(name)
	}
	if t.Status == domain.RunSkipped {
		return skipReason, skipReason != t.Reason
	}
	return skipReason, skipReason != ""
}
