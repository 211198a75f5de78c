package api_test

import (
	"io/fs"
	"net/http"
	pathpkg "path"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/web"
)

// TestDashboardAssets: the console's page loads only files the binary serves — its module
// scripts as JavaScript (a browser refuses a module of another type under nosniff), the
// vendored chart library with its licence beside it — and no page inlines a script or a
// style, which the Content-Security-Policy would refuse.
func TestDashboardAssets(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	status, page := st.As("").Do(t, http.MethodGet, "/", nil)
	require.Equal(t, http.StatusOK, status)
	refs := regexp.MustCompile(`(?:src|href)="(/ui/[^"]+)"`).FindAllStringSubmatch(string(page), -1)
	require.NotEmpty(t, refs)
	for _, m := range refs {
		resp, err := http.Get(st.URL + m[1]) // a nested asset path, which the document's /ui/{file} cannot spell
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, m[1])
		if strings.HasSuffix(m[1], ".js") {
			require.Contains(t, resp.Header.Get("Content-Type"), "javascript", m[1])
		}
	}
	static, err := fs.Sub(web.Static, "static")
	require.NoError(t, err)
	licence, err := fs.ReadFile(static, "vendor/uplot/LICENSE")
	require.NoError(t, err)
	require.Contains(t, string(licence), "MIT License")
	modules := regexp.MustCompile(`from "\./([a-z_/]+\.js)"`)
	require.NoError(t, fs.WalkDir(static, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(path, "vendor/") {
			return err
		}
		b, err := fs.ReadFile(static, path)
		require.NoError(t, err)
		text := string(b)
		require.NotRegexp(t, `<script>|<style|\sstyle="|\son[a-z]+="`, text, "%s inlines a script or a style", path)
		// Every module a script imports is one the binary embeds.
		for _, m := range modules.FindAllStringSubmatch(text, -1) {
			_, err := fs.Stat(static, pathpkg.Join(pathpkg.Dir(path), m[1]))
			require.NoError(t, err, "%s imports %s", path, m[1])
		}
		return nil
	}))
}

// TestDashboardConfigNamesTheTraceViewer: with TICKGATE_TRACE_URL_TEMPLATE set, config.js
// hands the console the viewer's address of a trace, which its run rows link to (ui.js
// traceLink); unset, it hands none and no row links.
func TestDashboardConfigNamesTheTraceViewer(t *testing.T) {
	t.Parallel()
	for template, want := range map[string]string{
		"http://127.0.0.1:16686/trace/{trace_id}": `"traceURL":"http://127.0.0.1:16686/trace/{trace_id}"`,
		"": `"traceURL":""`,
	} {
		st := teststack.Start(t, teststack.Options{NoWorker: true, Configure: func(c *config.Config) { c.TraceURLTemplate = template }})
		status, body := st.As("").Do(t, http.MethodGet, "/ui/config.js", nil)
		require.Equal(t, http.StatusOK, status)
		require.Contains(t, string(body), want)
	}
}
