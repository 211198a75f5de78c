package e2e_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The console's browser tests drive headless Chromium through chromedp, one test per page;
// these helpers keep them short.

// consoleBrowser starts headless Chromium (browser) and fails the test, at its end, on any
// JavaScript exception the pages raised; console errors are logged.
func consoleBrowser(t *testing.T, bin string) context.Context {
	t.Helper()
	ctx := browser(t, bin)
	require.NoError(t, chromedp.Do(ctx)) // start the browser, so the subscription sees the first page
	var mu sync.Mutex
	var exceptions []string
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() {
				mu.Lock()
				exceptions = append(exceptions, m.Text)
				mu.Unlock()
			}
			if m.IsException() || m.Type == chromedp.ConsoleError {
				t.Logf("browser %s (%s)", m, m.URL)
			}
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		require.Empty(t, exceptions, "the console's pages raised JavaScript exceptions")
	})
	return ctx
}

// logIn opens the console at path (a hash route) and logs in with token.
func logIn(t *testing.T, ctx context.Context, url, token string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), token),
		chromedp.Click(chromedp.CSS(`#login-button`)),
		chromedp.WaitVisible(chromedp.CSS(`#nav`)),
	))
}

// waitJS waits (up to timeout) until the JavaScript expression is truthy in the page.
func waitJS(t *testing.T, ctx context.Context, timeout time.Duration, expr string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool]("!!("+expr+")", chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(100*time.Millisecond)))
	if err != nil {
		html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main").innerText`))
		t.Fatalf("waiting for %s: %v\npage:\n%s", expr, err, html)
	}
}

// jsValue evaluates an expression in the page.
func jsValue[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// shot saves a full-page screenshot under .dev/test/screenshots.
func shot(t *testing.T, ctx context.Context, root, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	saveShot(t, root, name, png)
}
