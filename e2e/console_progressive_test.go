package e2e_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// TestConsoleProgressiveRollout: a tenant-by-tenant migration in three waves runs on the
// whole product (worker, real Temporal, the SQL probe on real target databases). Wave 1
// bakes and passes; wave 2's health check fails on orders, whose database the migration
// broke, and the rollout pauses. The rollout's page shows why it paused, each wave with its
// bake and health results, the timeline's wave rows (a bake band, a ✓ and a ✗ mark) and
// wave 3's tasks waiting with the cause in words. Then the freeze: set from the banner on
// every page (who, when, why), shown on the rollout and on #freeze, lifted from the banner,
// and kept in the history.
func TestConsoleProgressiveRollout(t *testing.T) {
	bin, root := chromium(t)
	targets := map[string]string{}
	for _, db := range []string{"billing", "orders", "users", "search"} {
		targets[db] = testenv.DatabaseURL(t)
	}
	conn, err := pgx.Connect(context.Background(), targets["orders"])
	require.NoError(t, err)
	_, err = conn.Exec(context.Background(), `CREATE TABLE broken (id int)`) // what the migration did to orders
	require.NoError(t, err)
	conn.Close(context.Background())
	st := teststack.Start(t, teststack.Options{Configure: func(c *config.Config) { c.SQLTargets = targets }})

	task := func(db string) map[string]any {
		return map[string]any{"database": db, "type": "DDL", "version": "42", "executor": "noop", "payload": map[string]any{"sleep": "1s"}}
	}
	var ro api.RolloutView
	st.CreateRollout(t, map[string]any{
		"name": "add-invoices-index", "parallel_limit": 4,
		"tasks": []map[string]any{task("billing"), task("orders"), task("users"), task("search")},
		"strategy": map[string]any{
			"waves":  []any{map[string]any{"databases": []string{"billing"}}, map[string]any{"percent": 50}, map[string]any{"percent": 100}},
			"bake":   "2s",
			"health": map[string]any{"sql": "SELECT NOT EXISTS (SELECT 1 FROM pg_tables WHERE tablename = 'broken')", "timeout": "10s"},
		},
	}, &ro)
	id := strconv.FormatInt(ro.ID, 10)

	ctx := consoleBrowser(t, bin)
	logIn(t, ctx, st.URL+"/#rollout/"+id, st.AdminToken)
	waitJS(t, ctx, 90*time.Second, text("#rollout-reason")+`.includes("wave 2: health check failed on orders")`)
	waitJS(t, ctx, 15*time.Second, text("h2 .rollout-status")+` === "PAUSED"`)
	// The waves panel: wave 1 passed its checks, wave 2 failed on orders, wave 3 waits.
	waitJS(t, ctx, 15*time.Second, text(`li.wave[data-wave="1"]`)+`.includes("PASSED") && `+text(`li.wave[data-wave="1"] .health`)+`.includes("✓ sql billing")`)
	require.Contains(t, jsValue[string](t, ctx, text(`li.wave[data-wave="2"]`)), "FAILED")
	require.Contains(t, jsValue[string](t, ctx, text(`li.wave[data-wave="2"] .health`)), "✗ sql orders: the probe answered false")
	require.Contains(t, jsValue[string](t, ctx, text(`li.wave[data-wave="2"] .health`)), "✓ sql users")
	require.Contains(t, jsValue[string](t, ctx, text(`li.wave[data-wave="3"]`)), "WAITING")
	// The timeline: a row per wave, above its databases, with its bake and health marks.
	require.True(t, jsValue[bool](t, ctx, `!!document.querySelector('.wave-lane[data-wave="1"] .tl-bake') && !!document.querySelector('.wave-lane[data-wave="1"] .tl-health.health-ok')`))
	require.True(t, jsValue[bool](t, ctx, `!!document.querySelector('.wave-lane[data-wave="2"] .tl-bake') && !!document.querySelector('.wave-lane[data-wave="2"] .tl-health.health-failed')`))
	require.Equal(t, []string{"wave:1", "lane:billing", "wave:2", "lane:orders", "lane:users", "wave:3", "lane:search"},
		jsValue[[]string](t, ctx, `[...document.querySelectorAll("#timeline .lane")].map(l => l.dataset.wave ? "wave:" + l.dataset.wave : "lane:" + l.dataset.lane)`))
	waitJS(t, ctx, 15*time.Second, text(`[data-lane="search"] .tl-chip`)+`.includes("wave 3 waits: health check failed on orders: the probe answered false")`)
	require.Equal(t, "3", jsValue[string](t, ctx, `document.querySelector('#tasks tr:last-child td:nth-child(3)').textContent`), "the task's wave")

	// The freeze, from the banner that every page carries.
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#freeze-set`)))
	waitJS(t, ctx, 10*time.Second, `!!document.querySelector("dialog[open] #freeze-reason")`)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#freeze-reason`), "incident 42: checkout errors"),
		clickCSS(`dialog[open] button[type=submit]`),
	))
	waitJS(t, ctx, 10*time.Second, text("#freeze-banner .freeze-on")+`.includes("incident 42: checkout errors")`)
	require.Regexp(t, `Frozen since .* by token \d+ \(teststack\): incident 42: checkout errors — nothing new starts`, jsValue[string](t, ctx, text("#freeze-banner .freeze-on")))
	waitJS(t, ctx, 10*time.Second, text("#rollout-frozen")+`.includes("incident 42")`)
	shot(t, ctx, root, "console-progressive-rollout.png")

	// On another page too, and on the freeze page with its history.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(st.URL+"/#schedules")))
	waitJS(t, ctx, 10*time.Second, text("#freeze-banner .freeze-on")+`.includes("incident 42")`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(st.URL+"/#freeze")))
	waitJS(t, ctx, 10*time.Second, text(".freeze-now")+`.includes("incident 42")`)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`#freeze-lift`)))
	waitJS(t, ctx, 10*time.Second, `!!document.querySelector("dialog[open]")`)
	require.NoError(t, chromedp.Do(ctx, clickCSS(`dialog[open] button[type=submit]`)))
	waitJS(t, ctx, 10*time.Second, `!!document.querySelector("#freeze-set")`)
	waitJS(t, ctx, 10*time.Second, text("table.freezes tbody")+`.includes("incident 42")`)
	require.Regexp(t, `token \d+ \(teststack\)`, jsValue[string](t, ctx, `document.querySelector("table.freezes tbody tr td:nth-child(6)").textContent`), "who lifted it")
	var fs api.FreezeStateView
	fr, err := st.Client(t).GetFreezeWithResponse(t.Context())
	require.NoError(t, err)
	teststack.Decode(t, fr.Body, &fs)
	require.Nil(t, fs.Frozen)
	require.Len(t, fs.History, 1)
	require.NotNil(t, fs.History[0].LiftedAt)
	shot(t, ctx, root, "console-freeze-history.png")
}
