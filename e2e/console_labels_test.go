package e2e_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// TestConsoleLabelsBulkPauseAndHistory: the schedule form takes labels and a concurrency cap
// (a bad label named beside its field); the list shows each schedule's labels and filters by
// a selector (a bad one answered beside its input), and pauses every schedule it matches with
// a note, saying what it did; the schedule's page shows its labels, its cap and who paused
// it, when and why.
func TestConsoleLabelsBulkPauseAndHistory(t *testing.T) {
	bin, root := chromium(t)
	st := teststack.Start(t, teststack.Options{})
	for name, team := range map[string]string{"bill-a": "billing", "bill-b": "billing", "ops-a": "ops"} {
		st.CreateSchedule(t, map[string]any{
			"name": name, "spec": map[string]any{"cron": "0 * * * *"},
			"action": map[string]any{"kind": "event", "topic": "t", "type": "x"}, "labels": map[string]string{"team": team},
		})
	}
	ctx := consoleBrowser(t, bin)
	logIn(t, ctx, st.URL+"/#schedules/new", st.NewToken(t, "operator", ""))

	// The form: a workflow schedule with a cap and labels.
	waitJS(t, ctx, 15*time.Second, text("#preview-description")+`.includes("at minute 0 past every hour (UTC)")`)
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#f-name`), "capped-report"),
		clickCSS(`#f-actionkind-workflow`)))
	jsValue[bool](t, ctx, setField("f-wftype", "Report"))
	jsValue[bool](t, ctx, setField("f-taskqueue", "reports"))
	jsValue[bool](t, ctx, setField("f-overlap", "allow_all"))
	jsValue[bool](t, ctx, setField("f-max", "2"))
	jsValue[bool](t, ctx, setField("f-labels", "team=billing\ntier=-gold"))
	waitJS(t, ctx, 15*time.Second, text("#f-labels-error")+` === "labels.tier: the value \"-gold\" must be empty or at most 63 characters: alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"`)
	jsValue[bool](t, ctx, setField("f-labels", "team=billing\ntier=gold"))
	waitJS(t, ctx, 15*time.Second, text("#f-labels-error")+` === ""`)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#save`)))
	waitJS(t, ctx, 15*time.Second, `location.hash === "#schedule/capped-report"`)
	waitJS(t, ctx, 15*time.Second, text("#max-concurrent")+` === "2 runs at once; a tick beyond waits"`)
	require.Equal(t, "team=billing tier=gold", jsValue[string](t, ctx, text("#labels")))
	var created api.ScheduleView
	st.GetSchedule(t, "capped-report", &created)
	require.Equal(t, 2, *created.Policies.MaxConcurrent)

	// The list, filtered by labels.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(st.URL+"/#schedules")))
	waitJS(t, ctx, 15*time.Second, `document.querySelectorAll("#schedules tbody tr").length === 4`)
	jsValue[bool](t, ctx, setField("f-selector", "team"))
	waitJS(t, ctx, 15*time.Second, text("#f-selector-error")+`.includes("want key=value or key!=value")`)
	require.Equal(t, "true", jsValue[string](t, ctx, `document.getElementById("f-selector").getAttribute("aria-invalid")`))
	jsValue[bool](t, ctx, setField("f-selector", "team=billing,tier!=gold"))
	waitJS(t, ctx, 15*time.Second, `(rows => rows.length === 2 && rows[0].dataset.schedule === "bill-a" && rows[1].dataset.schedule === "bill-b")(Array.from(document.querySelectorAll("#schedules tbody tr")))`)
	require.Equal(t, "team=billing", jsValue[string](t, ctx, text(`tr[data-schedule="bill-a"] td.labels`)))
	shot(t, ctx, root, "console-schedules-selector.png")

	// Pause every schedule the selector matches, with a note.
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#bulk-pause`), chromedp.WaitVisible(chromedp.CSS(`dialog #d-bulk-note`)),
		chromedp.SendKeys(chromedp.CSS(`dialog #d-bulk-note`), "billing freeze"), clickCSS(`dialog button[type=submit]`)))
	waitJS(t, ctx, 15*time.Second, text("#bulk-result")+` === "2 paused, 0 unchanged: bill-a paused, bill-b paused."`)
	waitJS(t, ctx, 15*time.Second, text(`tr[data-schedule="bill-a"] .state`)+`.startsWith("Paused")`)
	var ops api.ScheduleView
	st.GetSchedule(t, "ops-a", &ops)
	require.False(t, ops.Paused, "not matched, not paused")

	// The schedule's page: who paused it, when and why.
	require.NoError(t, chromedp.Do(ctx, clickCSS(`tr[data-schedule="bill-a"] a`)))
	waitJS(t, ctx, 15*time.Second, `document.querySelectorAll("#history tbody tr").length === 1`)
	row := jsValue[string](t, ctx, text("#history tbody tr"))
	require.Contains(t, row, "pause")
	require.Contains(t, row, "teststack (token ")
	require.Contains(t, row, "billing freeze")
	shot(t, ctx, root, "console-schedule-history.png")
}
