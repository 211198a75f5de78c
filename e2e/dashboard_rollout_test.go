package e2e_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// TestDashboardRolloutStatus: a rollout whose every task was canceled shows CANCELED in the
// dashboard's list and on its page — the status the API derived, not DONE.
func TestDashboardRolloutStatus(t *testing.T) {
	bin, root := chromium(t)
	st := teststack.Start(t, teststack.Options{})
	later := time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	var ro api.RolloutView
	st.CreateRollout(t, map[string]any{"name": "called-off", "parallel_limit": 1, "tasks": []map[string]any{
		{"database": "app", "type": "DDL", "version": "1", "executor": "noop", "run_at": later},
	}}, &ro)
	var page struct {
		Items []api.TaskRunView `json:"items"`
	}
	st.RolloutTasks(t, ro.ID, &page)
	require.Len(t, page.Items, 1)
	_, err := st.Client(t).CancelTaskRunWithResponse(t.Context(), page.Items[0].ID)
	require.NoError(t, err)

	viewer := st.NewToken(t, "viewer", "")
	b := browser(t, bin)
	id := strconv.FormatInt(ro.ID, 10)
	row := `tr[data-rollout="` + id + `"]`
	require.NoError(t, chromedp.Do(b,
		chromedp.Navigate(st.URL+"/#rollouts"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), viewer),
		clickCSS(`#login-button`),
		chromedp.WaitVisible(chromedp.CSS(row+` .rollout-status`)),
	))
	listed, err := chromedp.Run(b, chromedp.Text(chromedp.CSS(row+` .rollout-status`)))
	require.NoError(t, err)
	require.Equal(t, "CANCELED", strings.TrimSpace(listed))

	require.NoError(t, chromedp.Do(b,
		chromedp.Navigate(st.URL+"/#rollout/"+id),
		chromedp.WaitVisible(chromedp.CSS(`h2 .rollout-status`)),
	))
	header, err := chromedp.Run(b, chromedp.Text(chromedp.CSS(`h2 .rollout-status`)))
	require.NoError(t, err)
	require.Equal(t, "CANCELED", strings.TrimSpace(header))
	shot, err := chromedp.Run(b, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	saveShot(t, root, "dashboard-rollout-canceled.png", shot)
}
