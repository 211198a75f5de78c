package e2e_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// TestConsoleCalendarsAndOneTimeSchedules: a calendar is created on its page (a bad date
// named beside the dates), a one-time schedule excluding it through the schedule form (its
// preview "once, at …"), the calendar's page lists the schedule excluding it and refuses its
// deletion saying which, and an edit saves a new version and says what it did to the fires
// armed ahead.
func TestConsoleCalendarsAndOneTimeSchedules(t *testing.T) {
	bin, root := chromium(t)
	st := teststack.Start(t, teststack.Options{})
	ctx := consoleBrowser(t, bin)
	logIn(t, ctx, st.URL+"/#calendars", st.NewToken(t, "operator", ""))

	waitJS(t, ctx, 15*time.Second, `!!document.getElementById("calendar-form")`)
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#c-name`), "holidays-fr")))
	jsValue[bool](t, ctx, setField("c-timezone", "Europe/Paris"))
	jsValue[bool](t, ctx, setField("c-dates", "2026-12-25\n2026-13-01"))
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#create-calendar`)))
	waitJS(t, ctx, 15*time.Second, text("#c-dates-error")+`.startsWith("dates[1]: ")`)
	jsValue[bool](t, ctx, setField("c-dates", "2026-12-25\n2027-01-01"))
	jsValue[bool](t, ctx, setField("c-ranges", "2026-12-31T18:00:00+01:00/2026-12-31"))
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#create-calendar`)))
	waitJS(t, ctx, 15*time.Second, `location.hash === "#calendar/holidays-fr" && `+text("#calendar-dates")+` === "2026-12-25, 2027-01-01"`)
	shot(t, ctx, root, "console-calendar.png")

	// A one-time reminder excluding it, through the schedule form.
	at := time.Now().UTC().Add(48 * time.Hour).Truncate(time.Second)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(st.URL+"/#schedules/new")))
	waitJS(t, ctx, 15*time.Second, `!!document.getElementById("f-timing-at")`)
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#f-name`), "remind-ada"), clickCSS(`#f-timing-at`)))
	jsValue[bool](t, ctx, setField("f-at", at.Format("2006-01-02T15:04:05")))
	jsValue[bool](t, ctx, setField("f-after", "delete"))
	jsValue[bool](t, ctx, setField("f-calendars", "holidays-fr"))
	jsValue[bool](t, ctx, setField("f-topic", "reminders"))
	jsValue[bool](t, ctx, setField("f-type", "due"))
	waitJS(t, ctx, 15*time.Second, text("#preview-description")+` === "once, at `+at.Format(time.RFC3339)+`, except what the calendars holidays-fr exclude"`)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#save`)))
	waitJS(t, ctx, 15*time.Second, `location.hash === "#schedule/remind-ada" && `+text("#after-completion")+` === "deleted"`)
	require.Equal(t, "holidays-fr", jsValue[string](t, ctx, text("#exclude-calendars")))
	var s api.ScheduleView
	st.GetSchedule(t, "remind-ada", &s)
	require.Equal(t, at, s.Spec.At.UTC())
	require.Equal(t, "delete", s.AfterCompletion)

	// The calendar's page: who excludes it, no deletion while one does, an edit.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(st.URL+"/#calendar/holidays-fr")))
	waitJS(t, ctx, 15*time.Second, text("#calendar-users")+` === "remind-ada"`)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#delete-calendar`)))
	waitJS(t, ctx, 15*time.Second, text("#calendar-result")+`.includes("excluded by 1 schedules: remind-ada")`)
	jsValue[bool](t, ctx, setField("c-dates", "2026-12-24\n2026-12-25"))
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#save-calendar`)))
	waitJS(t, ctx, 15*time.Second, text("#calendar-version")+` === "2" && `+text("#calendar-result")+`.startsWith("Saved: 0 armed fire(s) now skipped")`)
	waitJS(t, ctx, 15*time.Second, text("#calendar-dates")+` === "2026-12-24, 2026-12-25"`)
}
