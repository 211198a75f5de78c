package e2e_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
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
		clickCSS(`#login-button`),
		chromedp.WaitVisible(chromedp.CSS(`#nav`)),
	))
}

// clickCSS clicks the first visible element a CSS selector names, as a user does: the mouse
// pressed and released at its centre (chromedp.Click). The console's live pages replace a
// region when its content changed (a refresh, a re-render after a command), so the node the
// query found can be gone by the time the click is aimed at it; the click is then aimed again
// at the node now there, as a user clicks again. Nothing is clicked twice: that error comes
// from locating the node, before the mouse is pressed.
func clickCSS(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, target *chromedp.Target) (chromedp.Void, error) {
		deadline := time.Now().Add(clickRetryFor)
		for {
			_, err := chromedp.Click(chromedp.CSS(sel))(ctx, target)
			if err == nil || !nodeReplaced(err) || time.Now().After(deadline) {
				return chromedp.Void{}, err
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// clickRetryFor bounds how long clickCSS aims again at a replaced node.
const clickRetryFor = 5 * time.Second

// nodeReplaced tells whether a browser error says the node found was detached from the page.
func nodeReplaced(err error) bool {
	var cdpErr *cdproto.Error
	if !errors.As(err, &cdpErr) {
		return false
	}
	return strings.Contains(cdpErr.Message, "Could not find node with given id") ||
		strings.Contains(cdpErr.Message, "Node is detached from document") ||
		strings.Contains(cdpErr.Message, "No node with given id found")
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
