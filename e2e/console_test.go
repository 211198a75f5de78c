package e2e_test

// The operator's console in headless Chromium, one test per page (docs/console.md). Each
// saves screenshots under .dev/test/screenshots.

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// setField sets a form control's value and fires input and change, as typing and choosing do.
func setField(id, value string) string {
	return fmt.Sprintf(`(el => { el.value = %q; el.dispatchEvent(new Event("input", {bubbles: true})); el.dispatchEvent(new Event("change", {bubbles: true})); return true; })(document.getElementById(%q))`, value, id)
}

func text(sel string) string {
	return fmt.Sprintf(`((document.querySelector(%q) || {}).textContent || "")`, sel)
}

// TestConsoleOverview: the landing page shows the last hour's fires (rising while the page
// is open, with the time it last updated), rollouts in flight and the active device task,
// each figure links to what it counts, and an unknown route says "Not found".
func TestConsoleOverview(t *testing.T) {
	bin, root := chromium(t)
	st := teststack.Start(t, teststack.Options{})
	st.CreateSchedule(t, map[string]any{
		"name": "heartbeat", "spec": map[string]any{"interval": "1s"},
		"action": map[string]any{"kind": "event", "topic": "beats", "type": "beat"},
	})
	var ro api.RolloutView
	st.CreateRollout(t, map[string]any{"name": "in-flight", "parallel_limit": 1, "tasks": []map[string]any{
		{"database": "app", "type": "DDL", "version": "7", "executor": "noop", "run_at": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)},
	}}, &ro)
	st.CreatePC(t, "ov-pc", 2)
	st.CreateDevice(t, "ov-pc", "ov-d1")
	var task api.DeviceTaskView
	st.CreateTask(t, map[string]any{"payload": map[string]any{"cmd": "reboot"}}, &task)

	ctx := consoleBrowser(t, bin)
	logIn(t, ctx, st.URL+"/", st.NewToken(t, "viewer", ""))
	fired := `Number(` + text("#c-fired .card-value") + `.replace(/,/g, ""))`
	waitJS(t, ctx, 60*time.Second, fired+" >= 2")
	first := jsValue[int](t, ctx, fired)
	// Live: the page refreshes itself, and the figure grows with the schedule's fires.
	waitJS(t, ctx, 60*time.Second, fired+" > "+strconv.Itoa(first))
	require.True(t, strings.HasPrefix(jsValue[string](t, ctx, text("#updated")), "updated "))
	waitJS(t, ctx, 30*time.Second, text("#c-rollouts .card-value")+` === "1"`)
	waitJS(t, ctx, 30*time.Second, text("#active-task")+` === "Task #`+strconv.FormatInt(task.ID, 10)+`"`)
	require.True(t, jsValue[bool](t, ctx, `!!document.querySelector("#chart-fires canvas") && !!document.querySelector("#chart-lateness canvas")`))
	for card, href := range map[string]string{
		"#c-fired": "#runs?window=1h", "#c-late": "#runs?late_over=1s&window=1h", "#c-missed": "#runs?status=MISSED&window=1h",
		"#c-skipped": "#runs?status=SKIPPED&window=1h", "#c-failed": "#runs?status=FAILED&window=1h",
		"#c-rollouts": "#rollouts?status=RUNNING,PAUSED", "#c-schedules": "#schedules",
	} {
		require.Equal(t, href, jsValue[string](t, ctx, `document.querySelector("`+card+`").getAttribute("href")`), card)
	}
	shot(t, ctx, root, "console-overview.png")

	// A figure leads to what it counts.
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#c-fired`)))
	waitJS(t, ctx, 15*time.Second, `document.querySelectorAll("#all-runs tbody tr").length >= 2`)
	require.Contains(t, jsValue[string](t, ctx, text("#all-runs tbody")), "heartbeat")
	require.NoError(t, chromedp.Do(ctx, clickCSS(`a[data-tab="overview"]`), chromedp.WaitVisible(chromedp.CSS(`#c-rollouts`)),
		clickCSS(`#c-rollouts`)))
	waitJS(t, ctx, 15*time.Second, `!!document.querySelector('tr[data-rollout="`+strconv.FormatInt(ro.ID, 10)+`"]')`)

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(st.URL+"/#devices")))
	waitJS(t, ctx, 15*time.Second, text("#view h2")+` === "Not found"`)
}

// TestConsoleScheduleLifecycle: a schedule is created through the form (the API checks it
// as the user types, naming the bad field, and previews its description and next 10 fire
// times), its ticks appear in the page's grid; it is edited, triggered with an overlap
// policy, rescheduled, paused with a note, backfilled
// (the backfill runs while it is paused), its runs filtered, and deleted after a confirmation.
func TestConsoleScheduleLifecycle(t *testing.T) {
	bin, root := chromium(t)
	st := teststack.Start(t, teststack.Options{})
	ctx := consoleBrowser(t, bin)
	logIn(t, ctx, st.URL+"/#schedules/new", st.NewToken(t, "operator", ""))

	waitJS(t, ctx, 15*time.Second, text("#preview-description")+`.includes("at minute 0 past every hour (UTC)")`)
	require.EqualValues(t, 10, jsValue[int](t, ctx, `document.querySelectorAll("#preview-times li").length`))
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#f-name`), "console-demo")))
	jsValue[bool](t, ctx, setField("f-cron", "61 * * * *"))
	waitJS(t, ctx, 15*time.Second, text("#f-cron-error")+`.startsWith("spec.cron: ")`)
	require.Equal(t, "true", jsValue[string](t, ctx, `document.getElementById("f-cron").getAttribute("aria-invalid")`))
	shot(t, ctx, root, "console-schedule-form-error.png")

	require.NoError(t, chromedp.Do(ctx, clickCSS(`#f-timing-interval`)))
	jsValue[bool](t, ctx, setField("f-every", "1"))
	jsValue[bool](t, ctx, setField("f-unit", "SECONDS"))
	waitJS(t, ctx, 15*time.Second, text("#preview-description")+`.startsWith("every second from ")`)
	require.Empty(t, jsValue[string](t, ctx, text("#f-cron-error")))
	require.EqualValues(t, 10, jsValue[int](t, ctx, `document.querySelectorAll("#preview-times li").length`))
	shot(t, ctx, root, "console-schedule-form.png")

	require.NoError(t, chromedp.Do(ctx, clickCSS(`#save`)))
	waitJS(t, ctx, 15*time.Second, `location.hash === "#schedule/console-demo"`)
	// Its ticks appear in the grid as they fire.
	waitJS(t, ctx, 60*time.Second, `document.querySelectorAll("#tick-grid .tick.status-SUCCEEDED").length >= 3`)
	require.Contains(t, jsValue[string](t, ctx, `document.querySelector("#tick-grid .tick.status-SUCCEEDED").title`), " · scheduled · SUCCEEDED · late ")
	waitJS(t, ctx, 15*time.Second, `document.querySelectorAll("#upcoming li").length === 10`)
	require.Contains(t, jsValue[string](t, ctx, `document.querySelector("h2 a.temporal").href`), "/workflows/schedule%2Fconsole-demo")
	shot(t, ctx, root, "console-schedule.png")

	// Edit: every 2 seconds.
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#edit`)))
	waitJS(t, ctx, 15*time.Second, `document.getElementById("f-every") && document.getElementById("f-every").value === "1"`)
	jsValue[bool](t, ctx, setField("f-every", "2"))
	waitJS(t, ctx, 15*time.Second, text("#preview-description")+`.startsWith("every 2 seconds from ")`)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#save`)))
	waitJS(t, ctx, 15*time.Second, `location.hash === "#schedule/console-demo" && `+text("#description")+`.startsWith("every 2 seconds")`)
	var s api.ScheduleView
	st.GetSchedule(t, "console-demo", &s)
	require.EqualValues(t, 2, s.Spec.Interval.Duration().Seconds())
	require.EqualValues(t, 2, s.Version)

	// Trigger now with an overlap policy for this run, then reschedule the next fire.
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#trigger`), chromedp.WaitVisible(chromedp.CSS(`dialog #d-overlap`))))
	jsValue[bool](t, ctx, setField("d-overlap", "allow_all"))
	require.NoError(t, chromedp.Do(ctx, clickCSS(`dialog button[type=submit]`)))
	waitJS(t, ctx, 15*time.Second, text("#command-result")+` === "Triggered: SUCCEEDED"`)
	waitJS(t, ctx, 15*time.Second, `Array.from(document.querySelectorAll("#tick-grid .tick")).some(c => c.title.includes(" · manual · SUCCEEDED"))`)
	next := time.Now().UTC().Add(2 * time.Hour).Truncate(time.Second)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#reschedule`), chromedp.WaitVisible(chromedp.CSS(`dialog #d-next`))))
	jsValue[bool](t, ctx, setField("d-next", next.Format("2006-01-02T15:04:05")))
	require.NoError(t, chromedp.Do(ctx, clickCSS(`dialog button[type=submit]`)))
	waitJS(t, ctx, 15*time.Second, text("#command-result")+` === "Rescheduled." && `+text("#upcoming li:first-child time")+` === "`+next.Format("2006-01-02 15:04:05Z")+`"`)

	// A dialog closes with Escape and changes nothing.
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#pause`), chromedp.WaitVisible(chromedp.CSS(`dialog #d-note`)), chromedp.KeyEvent(kb.Escape)))
	waitJS(t, ctx, 5*time.Second, `!document.querySelector("dialog")`)
	require.Equal(t, "Active", jsValue[string](t, ctx, text("#schedule-state")))

	// Pause with a note.
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#pause`), chromedp.WaitVisible(chromedp.CSS(`dialog #d-note`)),
		chromedp.SendKeys(chromedp.CSS(`dialog #d-note`), "maintenance window"), clickCSS(`dialog button[type=submit]`)))
	waitJS(t, ctx, 15*time.Second, text("#schedule-state")+` === "Paused" && `+text("#pause-note")+` === "maintenance window"`)

	// Backfill ticks of the anchored grid before the schedule existed: a bad range first,
	// answered with the API's problem naming its field inside the dialog.
	start := s.Spec.StartAt.Add(-20 * time.Second).UTC()
	end := s.Spec.StartAt.Add(-11 * time.Second).UTC()
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#backfill`), chromedp.WaitVisible(chromedp.CSS(`dialog #d-start`))))
	jsValue[bool](t, ctx, setField("d-start", end.Format("2006-01-02T15:04:05")))
	jsValue[bool](t, ctx, setField("d-end", start.Format("2006-01-02T15:04:05")))
	require.NoError(t, chromedp.Do(ctx, clickCSS(`dialog button[type=submit]`)))
	waitJS(t, ctx, 15*time.Second, text("#d-end-error")+` === "end: must not be before start"`)
	jsValue[bool](t, ctx, setField("d-start", start.Format("2006-01-02T15:04:05")))
	jsValue[bool](t, ctx, setField("d-end", end.Format("2006-01-02T15:04:05")))
	require.NoError(t, chromedp.Do(ctx, clickCSS(`dialog button[type=submit]`)))
	waitJS(t, ctx, 15*time.Second, text("#command-result")+`.startsWith("Backfill accepted: 5 ticks")`)
	shot(t, ctx, root, "console-schedule-paused-backfill.png")

	// The backfill's ticks run while the schedule stays paused (a backfill is an explicit
	// request, like a trigger) and show in the grid and in the runs filtered by trigger.
	waitJS(t, ctx, 60*time.Second, `Array.from(document.querySelectorAll("#tick-grid .tick")).filter(c => c.title.includes(" · backfill · SUCCEEDED")).length === 5`)
	require.Equal(t, "Paused", jsValue[string](t, ctx, text("#schedule-state")))
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#resume`)))
	waitJS(t, ctx, 15*time.Second, text("#schedule-state")+` === "Active"`)
	jsValue[bool](t, ctx, setField("r-trigger", "backfill"))
	waitJS(t, ctx, 15*time.Second, `(rows => rows.length === 5 && rows.every(r => r.children[4].textContent === "backfill"))(Array.from(document.querySelectorAll("#runs tbody tr")))`)
	shot(t, ctx, root, "console-schedule-backfilled.png")

	// Delete, confirmed by typing the name.
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#delete`), chromedp.WaitVisible(chromedp.CSS(`dialog #d-confirm`)),
		chromedp.SendKeys(chromedp.CSS(`dialog #d-confirm`), "console-demo"), clickCSS(`dialog button[type=submit]`)))
	waitJS(t, ctx, 15*time.Second, `location.hash === "#schedules" && !!document.getElementById("no-schedules")`)
	_, err := st.Client(t).GetScheduleWithResponse(t.Context(), "console-demo")
	require.True(t, client.IsNotFound(err), "deleted: %v", err)
}

// TestConsoleScheduleListTenThousand: with 10,000 schedules the list shows pages of 50,
// pages forward and back with the API's cursor, and filters by state and name on the server.
func TestConsoleScheduleListTenThousand(t *testing.T) {
	bin, root := chromium(t)
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	st.SeedSchedules(t, "fleet", 10000, 10)
	ctx := consoleBrowser(t, bin)
	logIn(t, ctx, st.URL+"/#schedules", st.NewToken(t, "viewer", ""))
	rows := `Array.from(document.querySelectorAll("#schedules tbody tr")).map(r => r.dataset.schedule)`
	waitJS(t, ctx, 15*time.Second, `(r => r.length === 50 && r[0] === "fleet-00001" && r[49] === "fleet-00050")(`+rows+`)`)
	// Keyboard: from the page's heading, Tab reaches the first control, and its focus shows.
	require.NoError(t, chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(`#view h2`)), chromedp.KeyEvent(kb.Tab)))
	require.Equal(t, "new-schedule", jsValue[string](t, ctx, `document.activeElement.id`))
	require.Equal(t, "solid", jsValue[string](t, ctx, `getComputedStyle(document.activeElement).outlineStyle`))
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#schedules-page-next`)))
	waitJS(t, ctx, 15*time.Second, `(r => r[0] === "fleet-00051")(`+rows+`) && `+text("#page-number")+` === "Page 2"`)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#schedules-page-next`)))
	waitJS(t, ctx, 15*time.Second, `(r => r[0] === "fleet-00101")(`+rows+`)`)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#schedules-page-prev`)))
	waitJS(t, ctx, 15*time.Second, `(r => r[0] === "fleet-00051")(`+rows+`)`)

	jsValue[bool](t, ctx, setField("f-state", "paused"))
	waitJS(t, ctx, 15*time.Second, `(r => r.length === 50 && r[0] === "fleet-00010" && r[1] === "fleet-00020")(`+rows+`) && document.querySelectorAll("#schedules td.state-paused").length === 50`)
	require.Contains(t, jsValue[string](t, ctx, `location.hash`), "state=paused")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#f-name`), "0042")))
	waitJS(t, ctx, 15*time.Second, `(r => r.length === 1 && r[0] === "fleet-00420")(`+rows+`)`)
	jsValue[bool](t, ctx, setField("f-state", ""))
	waitJS(t, ctx, 15*time.Second, `(r => r.length === 11 && r[0] === "fleet-00042" && r[10] === "fleet-00429")(`+rows+`) && document.getElementById("schedules-page-next").disabled`)
	shot(t, ctx, root, "console-schedules-10k.png")
}

// TestConsoleRolloutTimeline: a rollout's page draws one lane per database and follows the
// rollout live to DONE, the DDL lane's tasks side by side in version order; a held rollout
// shows each PENDING task's waiting cause, and the task and rollout commands work.
func TestConsoleRolloutTimeline(t *testing.T) {
	bin, root := chromium(t)
	st := teststack.Start(t, teststack.Options{})
	var ro api.RolloutView
	st.CreateRollout(t, map[string]any{"name": "timeline-demo", "parallel_limit": 3, "tasks": []map[string]any{
		{"database": "app", "type": "DDL", "version": "1", "executor": "noop", "payload": map[string]any{"sleep": "400ms"}},
		{"database": "app", "type": "DDL", "version": "2", "executor": "noop", "payload": map[string]any{"sleep": "400ms"}},
		{"database": "app", "type": "DDL", "version": "10", "executor": "noop", "payload": map[string]any{"sleep": "400ms"}},
		{"database": "billing", "type": "SDL", "version": "1", "executor": "noop", "payload": map[string]any{"sleep": "300ms"}},
		{"database": "billing", "type": "SDL", "version": "2", "executor": "noop", "payload": map[string]any{"sleep": "300ms"}},
		{"database": "logs", "type": "DML", "version": "1", "executor": "noop", "payload": map[string]any{"sleep": "300ms"}},
	}}, &ro)
	ctx := consoleBrowser(t, bin)
	logIn(t, ctx, st.URL+"/#rollout/"+strconv.FormatInt(ro.ID, 10), st.NewToken(t, "operator", ""))
	waitJS(t, ctx, 90*time.Second, text("h2 .rollout-status")+` === "DONE"`)
	waitJS(t, ctx, 15*time.Second, `document.querySelectorAll(".tl-task.status-DONE").length === 6`)
	require.Equal(t, []string{"app", "billing", "logs"}, jsValue[[]string](t, ctx, `Array.from(document.querySelectorAll(".lane")).map(l => l.dataset.lane)`))
	// The DDL lane, read left to right, is the version order: 1, 2, 10 (natural order).
	require.Equal(t, []string{"1", "2", "10"}, jsValue[[]string](t, ctx,
		`Array.from(document.querySelectorAll('.lane[data-lane="app"] .tl-task')).sort((a, b) => a.dataset.left - b.dataset.left).map(b => b.textContent)`))
	shot(t, ctx, root, "console-rollout-timeline.png")

	var held api.RolloutView
	later := time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	st.CreateRollout(t, map[string]any{"name": "held", "parallel_limit": 1, "tasks": []map[string]any{
		{"database": "app", "type": "DDL", "version": "1", "executor": "noop", "run_at": later},
		{"database": "app", "type": "DDL", "version": "2", "executor": "noop"},
	}}, &held)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(st.URL+"/#rollout/"+strconv.FormatInt(held.ID, 10))))
	waitJS(t, ctx, 30*time.Second, `document.querySelectorAll(".tl-chip.status-PENDING strong").length === 2`)
	chips := jsValue[string](t, ctx, text(".lane-waiting"))
	require.Contains(t, chips, "run at")
	require.Contains(t, chips, "version")
	shot(t, ctx, root, "console-rollout-waiting.png")
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#rollout-pause`)))
	waitJS(t, ctx, 15*time.Second, text("h2 .rollout-status")+` === "PAUSED"`)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#rollout-resume`)))
	waitJS(t, ctx, 15*time.Second, text("h2 .rollout-status")+` === "RUNNING"`)
	// Skip the task held by its run-at time: the next version is no longer blocked and runs.
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#tasks tbody tr:first-child .task-skip`)))
	waitJS(t, ctx, 60*time.Second, text("h2 .rollout-status")+` === "DONE" && `+text("#tasks tbody tr:first-child td:nth-child(5)")+` === "SKIPPED"`)
}

// TestConsolePCSlotGridRefill: a PC's page shows each of its slots with the execution in it,
// the attempt and the time left to its timeout; when the agent reports one done, the grid
// shows that slot refilled with the next device's execution.
func TestConsolePCSlotGridRefill(t *testing.T) {
	bin, root := chromium(t)
	st := teststack.Start(t, teststack.Options{Configure: func(c *config.Config) {
		c.TaskQueue = fmt.Sprintf("tq-%s-%d", t.Name(), time.Now().UnixNano())
	}})
	st.CreatePC(t, "rack-7", 2)
	for _, d := range []string{"phone-a", "phone-b", "phone-c"} {
		st.CreateDevice(t, "rack-7", d)
	}
	var task api.DeviceTaskView
	st.CreateTask(t, map[string]any{"payload": map[string]any{"cmd": "flash"}}, &task)
	agent := st.As(st.NewToken(t, "agent", "rack-7"))

	ctx := consoleBrowser(t, bin)
	logIn(t, ctx, st.URL+"/#pc/rack-7", st.NewToken(t, "operator", ""))
	waitJS(t, ctx, 30*time.Second, `document.querySelectorAll("#slot-grid .slot[data-execution]").length === 2`)
	var claimed struct {
		Items []api.DeviceExecutionDTO `json:"items"`
	}
	agent.JSON(t, http.MethodPost, "/api/v1/agent/pcs/rack-7/claim", map[string]any{"max": 2}, http.StatusOK, &claimed)
	require.Len(t, claimed.Items, 2)
	waitJS(t, ctx, 15*time.Second, `Array.from(document.querySelectorAll("#slot-grid .slot .slot-left")).filter(e => / to timeout$/.test(e.textContent)).length === 2`)
	require.Equal(t, "attempt 1/3", jsValue[string](t, ctx, text(`[data-slot="1"] .slot-attempt`)))
	shot(t, ctx, root, "console-pc-slots.png")

	inSlot1 := jsValue[string](t, ctx, `document.querySelector('[data-slot="1"]').dataset.execution`)
	used := map[string]bool{}
	for _, c := range claimed.Items {
		used[c.Device] = true
	}
	agent.JSON(t, http.MethodPost, "/api/v1/agent/task-devices/"+inSlot1+"/result", map[string]any{"status": "succeeded"}, http.StatusOK, nil)
	waitJS(t, ctx, 30*time.Second, `(e => !!e && !!e.dataset.execution && e.dataset.execution !== "`+inSlot1+`")(document.querySelector('[data-slot="1"]'))`)
	require.Equal(t, "phone-c", jsValue[string](t, ctx, text(`[data-slot="1"] .slot-device`)))
	require.Equal(t, "attempt 1/3", jsValue[string](t, ctx, text(`[data-slot="1"] .slot-attempt`)))
	require.Equal(t, "CREATED", jsValue[string](t, ctx, text(`[data-slot="1"] .slot-status`)))
	require.False(t, used["phone-c"])
	shot(t, ctx, root, "console-pc-slots-refilled.png")

	// The task's page: progress by status and the finished device's attempts.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(st.URL+"/#task/"+strconv.FormatInt(task.ID, 10))))
	waitJS(t, ctx, 15*time.Second, `!!document.querySelector('#executions tr[data-execution="`+inSlot1+`"]')`)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`button.attempts[data-id="`+inSlot1+`"]`)))
	waitJS(t, ctx, 15*time.Second, text(`tr[data-history="`+inSlot1+`"]`)+`.includes("SUCCEEDED")`)
	require.Contains(t, jsValue[string](t, ctx, text("#task-progress")), "succeeded 1")
	shot(t, ctx, root, "console-device-task.png")

	// The live refresh that shows the progress move leaves the Cancel button in place (the
	// same node, so a click made while the refresh lands is not lost). The node is marked by
	// a property, not an attribute, which would change the region's HTML.
	jsValue[bool](t, ctx, `(document.getElementById("task-cancel").keptAcrossRefresh = true)`)
	// Within a region that changes, what did not change stays too: the row of the execution
	// still waiting (phone-c's) keeps its Attempts button while another row turns SUCCEEDED.
	waitingRow := `Array.from(document.querySelectorAll("#executions tr[data-execution]")).find(r => r.children[1].textContent === "phone-c").querySelector("button.attempts")`
	jsValue[bool](t, ctx, `(`+waitingRow+`.keptAcrossRefresh = true)`)
	var inSlot2 string
	for _, c := range claimed.Items {
		if id := strconv.FormatInt(c.ID, 10); id != inSlot1 {
			inSlot2 = id
		}
	}
	agent.JSON(t, http.MethodPost, "/api/v1/agent/task-devices/"+inSlot2+"/result", map[string]any{"status": "succeeded"}, http.StatusOK, nil)
	waitJS(t, ctx, 30*time.Second, text("#task-progress")+`.includes("succeeded 2")`)
	require.True(t, jsValue[bool](t, ctx, `document.getElementById("task-cancel").keptAcrossRefresh === true`), "the refresh replaced the Cancel button")
	require.True(t, jsValue[bool](t, ctx, waitingRow+`.keptAcrossRefresh === true`), "the refresh replaced an unchanged execution's row")
	require.True(t, jsValue[bool](t, ctx, `Array.from(document.querySelectorAll("#task-progress [data-width]")).every(e => Math.abs(parseFloat(e.style.width) - parseFloat(e.dataset.width)) < 0.01)`),
		"the refreshed progress bar is sized")

	// Canceled, the task's executions in flight are counted canceled (the API's
	// counts.canceled) in its progress bar and its summary line.
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/tasks/%d/cancel", task.ID), nil, http.StatusOK, nil)
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload()))
	waitJS(t, ctx, 15*time.Second, `!!document.querySelector("#task-progress") && document.querySelector("#task-progress").textContent.includes("canceled 1")`)
	require.Contains(t, jsValue[string](t, ctx, `document.querySelector("#task-progress").nextElementSibling.textContent`), "2 succeeded, 0 active, 0 failed, 1 canceled")
}
