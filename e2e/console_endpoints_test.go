package e2e_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/dev/receiver"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// TestConsoleShowsAScheduleThatPausedItselfAndRedrivesARange: an http schedule whose
// endpoint answers 404 pauses itself (auto_pause after one failure); its page's paused banner
// says it paused itself and why, and the facts show its rule. Once the endpoint is fixed, the
// dead letter's "Redrive a range…" redrives its failed runs page by page, saying how many,
// and they are delivered; Resume clears the banner.
func TestConsoleShowsAScheduleThatPausedItselfAndRedrivesARange(t *testing.T) {
	bin, root := chromium(t)
	rcv, err := receiver.Start()
	require.NoError(t, err)
	t.Cleanup(rcv.Close)
	var failing atomic.Bool
	failing.Store(true)
	rcv.Answer = func(string, int) receiver.Answer {
		if failing.Load() {
			return receiver.Answer{Status: http.StatusNotFound}
		}
		return receiver.Answer{}
	}
	st := teststack.Start(t, teststack.Options{Configure: func(c *config.Config) {
		rule, err := outbound.Parse("127.0.0.1")
		require.NoError(t, err)
		c.HTTPAllow = rule
	}})
	st.CreateSchedule(t, map[string]any{
		"name": "console-gone", "spec": map[string]any{"interval": "1s"},
		"action": map[string]any{"kind": "http", "url": rcv.URL() + "/gone", "auto_pause": map[string]any{"after_failures": 1},
			"limits": map[string]any{"max_in_flight": 5}},
	})
	require.Eventually(t, func() bool {
		var s api.ScheduleView
		st.GetSchedule(t, "console-gone", &s)
		return s.AutoPaused != nil
	}, time.Minute, 100*time.Millisecond, "the schedule paused itself")
	ctx := consoleBrowser(t, bin)
	logIn(t, ctx, st.URL+"/#schedule/console-gone", st.NewToken(t, "operator", ""))
	waitJS(t, ctx, 15*time.Second, `!!document.getElementById("paused-banner")`)
	banner := jsValue[string](t, ctx, text("#paused-banner"))
	require.Contains(t, banner, "Paused itself")
	require.Contains(t, banner, "paused itself after 1 failed runs in a row (auto_pause.after_failures 1)")
	require.Contains(t, banner, "HTTP 404 Not Found")
	require.Contains(t, jsValue[string](t, ctx, text("#auto-pause")), "pauses itself after 1 failed runs in a row")
	require.Contains(t, jsValue[string](t, ctx, text("#host-limits")), "5 in flight")
	require.Contains(t, jsValue[string](t, ctx, text("#history")), string(domain.HistoryAutoPause))
	shot(t, ctx, root, "console-auto-paused.png")

	failing.Store(false)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#nav-dead-letter`)))
	waitJS(t, ctx, 15*time.Second, `!!document.getElementById("redrive-range")`)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#redrive-range`), chromedp.WaitVisible(chromedp.CSS(`dialog #d-rr-since`))))
	require.NoError(t, chromedp.Do(ctx, clickCSS(`dialog button[type=submit]`)))
	waitJS(t, ctx, 30*time.Second, text("#runs-result")+`.includes("Redrive of the range")`)
	result := jsValue[string](t, ctx, text("#runs-result"))
	require.Contains(t, result, "redriven")
	require.False(t, strings.Contains(result, " 0 redriven"), result)
	require.Eventually(t, func() bool {
		for _, r := range listRunsOf(t, st, "console-gone") {
			if r.Status == domain.RunFailed {
				return false
			}
		}
		return true
	}, time.Minute, 200*time.Millisecond, "every failed run delivered again")

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(st.URL+"/#schedule/console-gone")))
	waitJS(t, ctx, 15*time.Second, `!!document.getElementById("resume")`)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#resume`)))
	waitJS(t, ctx, 15*time.Second, `!document.getElementById("paused-banner") && !!document.getElementById("pause")`)
}

// listRunsOf lists a schedule's runs (the first page of 500).
func listRunsOf(t *testing.T, st *teststack.Stack, name string) []api.RunView {
	t.Helper()
	var page struct{ Items []api.RunView }
	st.ScheduleRuns(t, name, &page)
	return page.Items
}
