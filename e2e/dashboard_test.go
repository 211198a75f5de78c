package e2e_test

// The dashboard's browser test: headless Chromium (Debian's chromium package, installed by
// scripts/ensure-chromium.sh) against a whole running stack. TestMain is in main_test.go.

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/devstack"
	"github.com/tickgate/tickgate/internal/teststack"
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
// clicks Pause, sees its state change to Paused (and the API agrees), and saves a screenshot.
func TestDashboardPauseByClick(t *testing.T) {
	bin, root := chromium(t)
	st := teststack.Start(t, teststack.Options{})
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "nightly-report", "spec": map[string]any{"interval": "1h"},
		"action": map[string]any{"kind": "event", "topic": "reports", "type": "nightly"},
	}, http.StatusCreated, nil)
	operator := st.NewToken(t, "operator", "")

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 800))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelCtx()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	row := `tr[data-schedule="nightly-report"]`
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(st.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), operator),
		chromedp.Click(chromedp.CSS(`#login-button`)),
		chromedp.WaitVisible(chromedp.CSS(row+` td.state`)),
	))
	before, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(row+` td.state`)))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(row+` button.pause`)),
		chromedp.WaitVisible(chromedp.CSS(row+` td.state-paused`)),
	))
	after, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(row+` td.state`)))
	require.NoError(t, err)
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.Equal(t, "Active", strings.TrimSpace(before))
	require.Contains(t, after, "Paused")

	var got api.ScheduleView
	st.JSON(t, http.MethodGet, "/api/v1/schedules/nightly-report", nil, http.StatusOK, &got)
	require.True(t, got.Paused)
	require.Equal(t, "paused from the dashboard", got.Note)

	dir := filepath.Join(root, ".dev", "screenshots")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, "dashboard-paused.png")
	require.NoError(t, os.WriteFile(path, shot, 0o644))
	t.Logf("screenshot: %s", path)
}
