package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// TestDSTPolicyThroughTheAPI: spec.dst is taken by create, preview and describe alike. The
// preview and the schedule's page list the same fire times, the ones the policy gives at
// Europe/Berlin's next clock changes (2027-03-28 and 2027-10-31, 01:00 UTC), and the
// stored spec says the policy in full. A bad value is a 400 naming spec.dst.repeated or
// spec.dst.skipped, and creates nothing.
func TestDSTPolicyThroughTheAPI(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	event := map[string]any{"kind": "event", "topic": "reports", "type": "due"}
	at := func(month time.Month, day, hour, minute int) time.Time {
		return time.Date(2027, month, day, hour, minute, 0, 0, time.UTC)
	}
	for _, tc := range []struct {
		name    string
		dst     map[string]any
		startAt time.Time
		stored  map[string]string
		want    []time.Time
	}{{
		// Wall times 01:15 … 03:45: on 03-28, 02:15 and 02:45 do not exist, and do not fire.
		name: "spring-skip", dst: map[string]any{"skipped": "skip"}, startAt: at(3, 28, 0, 0),
		stored: map[string]string{"repeated": "once", "skipped": "skip"},
		want: []time.Time{at(3, 28, 0, 15), at(3, 28, 0, 45), at(3, 28, 1, 15), at(3, 28, 1, 45),
			at(3, 28, 23, 15), at(3, 28, 23, 45), at(3, 29, 0, 15), at(3, 29, 0, 45), at(3, 29, 1, 15), at(3, 29, 1, 45)},
	}, {
		// On 10-31, 02:15 and 02:45 happen twice (CEST, then CET): both fire.
		name: "fall-twice", dst: map[string]any{"repeated": "twice", "skipped": "shift"}, startAt: at(10, 30, 23, 0),
		stored: map[string]string{"repeated": "twice", "skipped": "shift"},
		want: []time.Time{at(10, 30, 23, 15), at(10, 30, 23, 45), at(10, 31, 0, 15), at(10, 31, 0, 45),
			at(10, 31, 1, 15), at(10, 31, 1, 45), at(10, 31, 2, 15), at(10, 31, 2, 45), at(11, 1, 0, 15), at(11, 1, 0, 45)},
	}, {
		// Without dst, as before: the repeated 02:15 and 02:45 fire once.
		name: "fall-default", startAt: at(10, 30, 23, 0),
		want: []time.Time{at(10, 30, 23, 15), at(10, 30, 23, 45), at(10, 31, 0, 15), at(10, 31, 0, 45),
			at(10, 31, 2, 15), at(10, 31, 2, 45), at(11, 1, 0, 15), at(11, 1, 0, 45), at(11, 1, 1, 15), at(11, 1, 1, 45)},
	}} {
		spec := map[string]any{"cron": "15,45 1-3 * * *", "timezone": "Europe/Berlin", "start_at": tc.startAt}
		if tc.dst != nil {
			spec["dst"] = tc.dst
		}
		body := map[string]any{"name": "dst-" + tc.name, "spec": spec, "action": event}
		var preview api.PreviewView
		st.JSON(t, http.MethodPost, "/api/v1/schedules/preview", body, http.StatusOK, &preview)
		require.Equal(t, tc.want, preview.NextFireTimes, "%s: preview", tc.name)

		var created api.ScheduleView
		st.JSON(t, http.MethodPost, "/api/v1/schedules", body, http.StatusCreated, &created)
		var page api.ScheduleView
		st.JSON(t, http.MethodGet, "/api/v1/schedules/dst-"+tc.name, nil, http.StatusOK, &page)
		require.Equal(t, tc.want, page.NextFireTimes, "%s: describe", tc.name)
		require.Equal(t, tc.want[0], page.NextRunAt.UTC(), "%s: next_run_at", tc.name)
		if tc.stored == nil {
			require.Nil(t, page.Spec.DST, "%s: a spec without dst stores none", tc.name)
		} else {
			require.NotNil(t, page.Spec.DST, tc.name)
			require.Equal(t, tc.stored, map[string]string{"repeated": page.Spec.DST.Repeated, "skipped": page.Spec.DST.Skipped}, tc.name)
		}
	}
	require.Contains(t, mustPreviewDescription(t, st, map[string]any{"repeated": "twice"}), "twice when a clock change repeats the time")

	before := scheduleCount(t, st)
	for _, bad := range []struct {
		dst   any
		field string
	}{
		{map[string]any{"repeated": "thrice"}, "spec.dst.repeated"},
		{map[string]any{"skipped": "never"}, "spec.dst.skipped"},
		{map[string]any{"repeated": "once", "skipped": 1}, "spec.dst.skipped"},
		{map[string]any{"hour": "once"}, "spec.dst.hour"},
		{"twice", "spec.dst"},
	} {
		body := map[string]any{"name": "dst-bad", "action": event,
			"spec": map[string]any{"cron": "30 2 * * *", "timezone": "Europe/Berlin", "dst": bad.dst}}
		problem(t, st, http.MethodPost, "/api/v1/schedules", body, http.StatusBadRequest, bad.field)
		problem(t, st, http.MethodPost, "/api/v1/schedules/preview", body, http.StatusBadRequest, bad.field)
	}
	problem(t, st, http.MethodPost, "/api/v1/schedules", map[string]any{"name": "dst-bad", "action": event,
		"spec": map[string]any{"interval": "1h", "dst": map[string]any{"repeated": "twice"}}}, http.StatusBadRequest, "spec.dst")
	require.Equal(t, before, scheduleCount(t, st), "the refusals created nothing")
}

func mustPreviewDescription(t *testing.T, st *teststack.Stack, dst map[string]any) string {
	t.Helper()
	var preview api.PreviewView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/preview", map[string]any{
		"spec":   map[string]any{"cron": "30 2 * * *", "timezone": "Europe/Berlin", "dst": dst},
		"action": map[string]any{"kind": "event", "topic": "reports", "type": "due"},
	}, http.StatusOK, &preview)
	return preview.Description
}
