package e2e_test

// The dashboard's browser test: headless Chromium (Debian's chromium package, installed by
// scripts/ensure-chromium.sh) against a whole running stack. TestMain is in main_test.go.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/dev/devstack"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// chromium finds (or installs, through the project's script) the Chromium binary.
func chromium(t *testing.T) (string, string) {
	t.Helper()
	root, err := devstack.RepoRoot()
	require.NoError(t, err)
	out, err := exec.Command(filepath.Join(root, "scripts", "ensure-chromium.sh")).Output()
	require.NoError(t, err, "scripts/ensure-chromium.sh")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], root
}

// TestDashboardPauseByClick logs in to the dashboard with a token, sees a schedule Active,
// clicks Pause, writes a note, sees its state change to Paused (and the API agrees), and
// saves a screenshot.
func TestDashboardPauseByClick(t *testing.T) {
	bin, root := chromium(t)
	st := teststack.Start(t, teststack.Options{})
	st.CreateSchedule(t, map[string]any{
		"name": "nightly-report", "spec": map[string]any{"interval": "1h"},
		"action": map[string]any{"kind": "event", "topic": "reports", "type": "nightly"},
	})
	operator := st.NewToken(t, "operator", "")

	ctx := browser(t, bin)

	row := `tr[data-schedule="nightly-report"]`
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(st.URL+"/#schedules"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), operator),
		clickCSS(`#login-button`),
		chromedp.WaitVisible(chromedp.CSS(row+` td.state`)),
	))
	before, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(row+` td.state`)))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx,
		clickCSS(row+` button.pause`),
		chromedp.WaitVisible(chromedp.CSS(`dialog #d-note`)),
		chromedp.SendKeys(chromedp.CSS(`dialog #d-note`), "paused from the dashboard"),
		clickCSS(`dialog button[type=submit]`),
		chromedp.WaitVisible(chromedp.CSS(row+` td.state-paused`)),
	))
	after, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(row+` td.state`)))
	require.NoError(t, err)
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.Equal(t, "Active", strings.TrimSpace(before))
	require.Contains(t, after, "Paused")

	var got api.ScheduleView
	st.GetSchedule(t, "nightly-report", &got)
	require.True(t, got.Paused)
	require.Equal(t, "paused from the dashboard", got.Note)

	saveShot(t, root, "dashboard-paused.png", shot)
}

// browser starts headless Chromium for the test.
func browser(t *testing.T, bin string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 800))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancelCtx)
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// saveShot keeps a screenshot under .dev/test/screenshots for a person to look at.
func saveShot(t *testing.T, root, name string, png []byte) {
	t.Helper()
	dir := filepath.Join(root, ".dev", "test", "screenshots")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
}

// TestDashboardViews: a viewer sees a schedule's SKIPPED and MISSED runs with their reasons,
// a rollout's per-status bar and each PENDING task's waiting cause, and a PC's slots.
func TestDashboardViews(t *testing.T) {
	bin, root := chromium(t)
	st := teststack.Start(t, teststack.Options{})
	ctx := context.Background()

	st.CreateSchedule(t, map[string]any{
		"name": "hourly", "spec": map[string]any{"interval": "1h"}, "paused": true,
		"action": map[string]any{"kind": "event", "topic": "t", "type": "x"},
	})
	now := time.Now().UTC().Truncate(time.Hour)
	_, err := st.Store.Pool.Exec(ctx, `INSERT INTO schedule_runs (schedule_id, scheduled_at, trigger, status, reason, idempotency_key, finished_at)
		SELECT id, $1::timestamptz, 'scheduled', 'SKIPPED', 'overlap skip: run 1 still running', 'ui-1', $1::timestamptz FROM schedules WHERE name = 'hourly'
		UNION ALL
		SELECT id, $2::timestamptz, 'catchup', 'MISSED', 'older than the catch-up window', 'ui-2', $2::timestamptz FROM schedules WHERE name = 'hourly'`,
		now.Add(-time.Hour), now.Add(-2*time.Hour))
	require.NoError(t, err)

	var ro struct {
		ID int64 `json:"id"`
	}
	st.CreateRollout(t, map[string]any{"name": "migrate-app", "parallel_limit": 1, "tasks": []map[string]any{
		{"database": "app", "type": "DDL", "version": "1", "executor": "noop", "run_at": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)},
		{"database": "app", "type": "DDL", "version": "2", "executor": "noop"},
	}}, &ro)
	id := strconv.FormatInt(ro.ID, 10)
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM task_runs WHERE rollout_id = $1 AND status = 'PENDING' AND waiting_cause IS NOT NULL`, ro.ID).Scan(&n))
		return n == 2
	}, 30*time.Second, 100*time.Millisecond, "the promoter records both tasks' waiting causes")

	st.CreatePC(t, "rack-1", 3)
	for _, serial := range []string{"phone-1", "phone-2"} {
		st.CreateDevice(t, "rack-1", serial)
	}

	viewer := st.NewToken(t, "viewer", "")
	b := browser(t, bin)
	require.NoError(t, chromedp.Do(b,
		chromedp.Navigate(st.URL+"/#schedule/hourly"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), viewer),
		clickCSS(`#login-button`),
		chromedp.WaitVisible(chromedp.CSS(`#runs td.reason`)),
	))
	runs, err := chromedp.Run(b, chromedp.Text(chromedp.CSS(`#runs tbody`)))
	require.NoError(t, err)
	require.Contains(t, runs, "SKIPPED")
	require.Contains(t, runs, "overlap skip: run 1 still running")
	require.Contains(t, runs, "MISSED")
	require.Contains(t, runs, "older than the catch-up window")
	shot, err := chromedp.Run(b, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	saveShot(t, root, "dashboard-runs.png", shot)

	require.NoError(t, chromedp.Do(b,
		chromedp.Navigate(st.URL+"/#rollouts"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-rollout="`+id+`"] .bar span.seg-PENDING`)),
	))
	require.NoError(t, chromedp.Do(b,
		chromedp.Navigate(st.URL+"/#rollout/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#tasks td.waiting strong`)),
	))
	tasks, err := chromedp.Run(b, chromedp.Text(chromedp.CSS(`#tasks tbody`)))
	require.NoError(t, err)
	require.Contains(t, tasks, "run at")
	require.Contains(t, tasks, "version")
	shot, err = chromedp.Run(b, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	saveShot(t, root, "dashboard-rollout.png", shot)

	require.NoError(t, chromedp.Do(b,
		chromedp.Navigate(st.URL+"/#pcs"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-pc="rack-1"] .slots`)),
	))
	slots, err := chromedp.Run(b, chromedp.Text(chromedp.CSS(`tr[data-pc="rack-1"] .slots`)))
	require.NoError(t, err)
	require.Equal(t, "0 / 2", strings.TrimSpace(slots))
	shot, err = chromedp.Run(b, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	saveShot(t, root, "dashboard-pcs.png", shot)
}
