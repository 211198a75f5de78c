package scheduleplan_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/internal/schedulespec"
)

// A one-time spec's at may lie in the past by at most the catch-up window (never less than
// the on-time tolerance), unless a change gives the stored at again; after_completion is a
// one-time schedule's only; and such a schedule counts its ticks from just before its at,
// so that its one tick still fires.
func TestOneTimeRulesAcceptARecentAtAndCountFromJustBeforeIt(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	oneTime := func(at time.Time) *schedulespec.Compiled {
		spec, err := schedulespec.Normalize(schedulespec.Spec{At: &at}, now)
		require.NoError(t, err)
		return spec
	}
	field := func(err error) string {
		var fe *domain.FieldError
		require.ErrorAs(t, err, &fe)
		return fe.Field
	}

	recent := oneTime(now.Add(-5 * time.Second))
	require.NoError(t, scheduleplan.CheckOneTime(recent, "", 0, nil, now), "within the on-time tolerance")
	require.Equal(t, now.Add(-5*time.Second-time.Microsecond), scheduleplan.CountFrom(recent, now), "its tick is still ahead")

	stale := oneTime(now.Add(-time.Hour))
	require.Equal(t, "spec.at", field(scheduleplan.CheckOneTime(stale, "", 0, nil, now)))
	require.NoError(t, scheduleplan.CheckOneTime(stale, "", 2*time.Hour, nil, now), "within the catch-up window")
	storedAt := now.Add(-time.Hour)
	require.NoError(t, scheduleplan.CheckOneTime(stale, "", 0, &storedAt, now), "the stored at, given again")

	ahead := oneTime(now.Add(time.Hour))
	require.NoError(t, scheduleplan.CheckOneTime(ahead, scheduleplan.AfterCompletionDelete, 0, nil, now))
	require.Equal(t, now, scheduleplan.CountFrom(ahead, now))
	require.Equal(t, scheduleplan.AfterCompletionDelete, scheduleplan.AfterCompletion(ahead, scheduleplan.AfterCompletionDelete))
	require.Equal(t, "after_completion", field(scheduleplan.CheckOneTime(ahead, "forget", 0, nil, now)))

	cron, err := schedulespec.Normalize(schedulespec.Spec{Cron: "0 3 * * *"}, now)
	require.NoError(t, err)
	require.Equal(t, "after_completion", field(scheduleplan.CheckOneTime(cron, scheduleplan.AfterCompletionKeep, 0, nil, now)),
		"only a one-time schedule completes")
	require.NoError(t, scheduleplan.CheckOneTime(cron, "", 0, nil, now))
	require.Equal(t, now, scheduleplan.CountFrom(cron, now))
	require.Equal(t, scheduleplan.AfterCompletionKeep, scheduleplan.AfterCompletion(cron, ""))
}

// A calendar edit turns exactly the armed fires whose outcome the edited calendars change:
// an event fire now excluded is SKIPPED naming the calendar, a tick armed SKIPPED that no
// calendar excludes any more fires with its event, and the others are left alone.
func TestRejudgeArmedTurnsOnlyTheFiresAnEditChanges(t *testing.T) {
	day := time.Date(2026, 12, 25, 9, 0, 0, 0, time.UTC)
	other := day.AddDate(0, 0, 1)
	spec, err := json.Marshal(schedulespec.Spec{Cron: "0 9 * * *", ExcludeCalendars: []string{"holidays"}})
	require.NoError(t, err)
	action, err := json.Marshal(domain.Action{Kind: domain.ActionEvent, Topic: "reports", Type: "report.due"})
	require.NoError(t, err)
	holidays := schedulespec.StoredCalendar{Name: "holidays", Timezone: "UTC", Dates: []string{"2026-12-25"}, Ranges: []byte("[]")}
	fire := func(id int64, tick time.Time, status domain.RunStatus, reason string) scheduleplan.ArmedFire {
		return scheduleplan.ArmedFire{RunID: id, Schedule: "nightly", Spec: spec, Action: action, Tick: tick, VisibleAt: tick, Status: status, Reason: reason}
	}
	verdicts, err := scheduleplan.RejudgeArmed([]schedulespec.StoredCalendar{holidays}, []scheduleplan.ArmedFire{
		fire(1, day, domain.RunSucceeded, ""),                                       // armed to fire, now excluded
		fire(2, other, domain.RunSucceeded, ""),                                     // armed to fire, still fires
		fire(3, other, domain.RunSkipped, schedulespec.ExclusionReason("holidays")), // armed skipped, no longer excluded
	})
	require.NoError(t, err)
	require.Len(t, verdicts, 2)
	require.Equal(t, int64(1), verdicts[0].RunID)
	require.Equal(t, schedulespec.ExclusionReason("holidays"), verdicts[0].SkipReason)
	require.Equal(t, int64(3), verdicts[1].RunID)
	require.Empty(t, verdicts[1].SkipReason)
	require.Equal(t, "reports", verdicts[1].Event.Topic, "it fires after all, with its event")
}
