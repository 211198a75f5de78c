package e2e_test

import (
	"context"
	"net/http"
	"strconv"
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

// TestConsoleHTTPActionDeadLetter: an http schedule is created through the form, with a
// header whose value the console never shows again, and the form shows its signing secret
// once; an edit keeps the header's stored value; a rotation with a grace period keeps both
// secrets signing; a manual run against a failing receiver, which verifies every Standard
// Webhooks signature with the first secret, ends FAILED and is listed in the dead letter
// with its attempts; once the receiver is fixed, Redrive delivers it again and it leaves the
// dead letter, SUCCEEDED.
func TestConsoleHTTPActionDeadLetter(t *testing.T) {
	bin, root := chromium(t)
	rcv, err := receiver.Start()
	require.NoError(t, err)
	t.Cleanup(rcv.Close)
	var failing atomic.Bool
	failing.Store(true)
	rcv.Answer = func(string, int) receiver.Answer {
		if failing.Load() {
			return receiver.Answer{Status: http.StatusBadGateway}
		}
		return receiver.Answer{}
	}
	st := teststack.Start(t, teststack.Options{Configure: func(c *config.Config) {
		rule, err := outbound.Parse("127.0.0.1")
		require.NoError(t, err)
		c.HTTPAllow = rule
	}})
	ctx := consoleBrowser(t, bin)
	logIn(t, ctx, st.URL+"/#schedules/new", st.NewToken(t, "operator", ""))

	waitJS(t, ctx, 15*time.Second, text("#preview-description")+` !== ""`)
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#f-name`), "console-hook"),
		clickCSS(`#f-actionkind-http`)))
	waitJS(t, ctx, 5*time.Second, `!document.getElementById("http-fields").hidden && !document.getElementById("retry-fields").hidden`)
	jsValue[bool](t, ctx, setField("f-url", rcv.URL()+"/console"))
	jsValue[bool](t, ctx, setField("f-body", `{"from": "console"}`))
	jsValue[bool](t, ctx, setField("f-headers", `{"Authorization": "Bearer console-header-value"}`))
	jsValue[bool](t, ctx, setField("f-max-attempts", "2"))
	jsValue[bool](t, ctx, setField("f-initial-backoff", "100ms"))
	waitJS(t, ctx, 15*time.Second, text("#preview-description")+` !== "" && `+text("#f-url-error")+` === ""`)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#save`)))
	waitJS(t, ctx, 15*time.Second, `!!document.getElementById("secret-value")`)
	shown := jsValue[string](t, ctx, `document.getElementById("secret-value").value`)
	row, err := st.Store.GetSchedule(context.Background(), "console-hook")
	require.NoError(t, err)
	stored, err := st.Store.ScheduleSecret(context.Background(), row.ID)
	require.NoError(t, err)
	require.Equal(t, stored, shown, "the form showed the secret the schedule signs with")
	shot(t, ctx, root, "console-http-secret.png")
	require.NoError(t, chromedp.Do(ctx, clickCSS(`dialog button[type=submit]`)))
	waitJS(t, ctx, 15*time.Second, `location.hash === "#schedule/console-hook" && !!document.getElementById("rotate-secret")`)
	require.Contains(t, jsValue[string](t, ctx, text("#retry")), "2 attempts at most")
	require.NotContains(t, jsValue[string](t, ctx, `document.body.innerHTML`), shown, "the schedule's page never shows the secret")
	require.NotContains(t, jsValue[string](t, ctx, `document.body.innerHTML`), "console-header-value", "nor a header's value")
	rcv.Secret = func(string) (string, bool) { return shown, true }

	// An edit names the stored header without its value, and keeps it.
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#edit`)))
	waitJS(t, ctx, 15*time.Second, `!!document.getElementById("f-header-names")`)
	require.Equal(t, "Authorization", jsValue[string](t, ctx, `document.getElementById("f-header-names").value`))
	require.NotContains(t, jsValue[string](t, ctx, `document.body.innerHTML`), "console-header-value")
	jsValue[bool](t, ctx, setField("f-body", `{"from": "console", "edited": true}`))
	waitJS(t, ctx, 15*time.Second, text("#preview-description")+` !== ""`)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#save`)))
	waitJS(t, ctx, 15*time.Second, `location.hash === "#schedule/console-hook" && !!document.getElementById("rotate-secret")`)
	values, err := st.Store.ScheduleHeaderValues(context.Background(), "console-hook")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"Authorization": "Bearer console-header-value"}, values, "the edit kept the stored value")

	// A rotation with a grace period: the new secret is shown once, and the old one (which
	// the receiver holds) signs too.
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#rotate-secret`), chromedp.WaitVisible(chromedp.CSS(`dialog #f-grace`))))
	jsValue[bool](t, ctx, setField("f-grace", "1h"))
	require.NoError(t, chromedp.Do(ctx, clickCSS(`dialog button[type=submit]`)))
	waitJS(t, ctx, 15*time.Second, `!!document.getElementById("secret-value")`)
	rotated := jsValue[string](t, ctx, `document.getElementById("secret-value").value`)
	require.NotEqual(t, shown, rotated)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`dialog button[type=submit]`)))
	var hist struct{ Items []api.HistoryEntryView }
	st.ScheduleHistory(t, "console-hook", &hist)
	require.Equal(t, domain.HistoryRotateSecret, hist.Items[0].Kind)
	require.Contains(t, hist.Items[0].Note, "signs too until")

	// A manual run against the failing receiver: FAILED, in the dead letter with its attempts.
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#trigger`), chromedp.WaitVisible(chromedp.CSS(`dialog #d-overlap`)),
		clickCSS(`dialog button[type=submit]`)))
	var runID int64
	require.Eventually(t, func() bool {
		var page struct{ Items []api.RunView }
		st.ScheduleRuns(t, "console-hook", &page)
		if len(page.Items) == 1 && page.Items[0].Status == domain.RunFailed {
			runID = page.Items[0].ID
			return true
		}
		return false
	}, time.Minute, 200*time.Millisecond)
	id := strconv.FormatInt(runID, 10)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#nav-dead-letter`)))
	waitJS(t, ctx, 15*time.Second, `!!document.querySelector('#all-runs tr[data-run="`+id+`"] button[data-redrive]')`)
	require.Contains(t, jsValue[string](t, ctx, text(`#all-runs tr[data-run="`+id+`"] details.attempts summary`)), "2 attempts")
	require.Contains(t, jsValue[string](t, ctx, text(`#all-runs tr[data-run="`+id+`"] .reason`)), "HTTP 502 Bad Gateway")
	require.True(t, jsValue[bool](t, ctx, `document.getElementById("rf-dead").checked`))
	// Opened, a run's attempts stay open while the page refreshes itself with a new row, and
	// its row stays the same element (its Redrive button under the pointer is not replaced).
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#all-runs tr[data-run="`+id+`"] details.attempts summary`)))
	jsValue[bool](t, ctx, `(document.querySelector('#all-runs tr[data-run="`+id+`"] button[data-redrive]').keptAcrossRefresh = true)`)
	st.Trigger(t, "console-hook")
	require.Eventually(t, func() bool {
		var dead struct{ Items []api.ScheduleRunView }
		st.DeadLetter(t, &dead)
		return len(dead.Items) == 2
	}, time.Minute, 200*time.Millisecond, "the second run failed")
	waitJS(t, ctx, 15*time.Second, `document.querySelectorAll("#all-runs > tbody > tr").length === 2`)
	require.True(t, jsValue[bool](t, ctx, `document.querySelector('#all-runs tr[data-run="`+id+`"] details.attempts').open`))
	require.EqualValues(t, 2, jsValue[int](t, ctx, `document.querySelectorAll('#all-runs tr[data-run="`+id+`"] details.attempts tbody tr').length`))
	require.True(t, jsValue[bool](t, ctx, `document.querySelector('#all-runs tr[data-run="`+id+`"] button[data-redrive]').keptAcrossRefresh === true`),
		"the refresh that added a row above replaced the run's row")
	shot(t, ctx, root, "console-dead-letter.png")

	failing.Store(false)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#all-runs tr[data-run="`+id+`"] button[data-redrive]`)))
	waitJS(t, ctx, 15*time.Second, text("#runs-result")+`.includes("redriven: RUNNING")`)
	waitJS(t, ctx, 30*time.Second, `!document.querySelector('#all-runs tr[data-run="`+id+`"]')`)
	require.Eventually(t, func() bool {
		var s api.ScheduleView
		st.GetSchedule(t, "console-hook", &s)
		for _, r := range s.RecentRuns {
			if r.ID == runID {
				return r.Status == domain.RunSucceeded && len(r.Redrives) == 1
			}
		}
		return false
	}, time.Minute, 200*time.Millisecond, "the redrive delivered")
	for key, d := range rcv.Deliveries() {
		require.Zero(t, d.BadSignatures, "every request of %s verified with the receiver's (old) secret during the grace", key)
	}
}
