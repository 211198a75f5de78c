package api

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/web"
)

// registerDashboard serves the embedded dashboard: / is its page, /ui/* its assets. The
// files hold no data; the page asks for a token and reads everything through /api/v1.
func (s *Server) registerDashboard(e *echo.Echo) {
	static, err := fs.Sub(web.Static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServer(http.FS(static))
	e.GET("/", func(c echo.Context) error {
		b, err := fs.ReadFile(static, "index.html")
		if err != nil {
			return err
		}
		c.Response().Header().Set("Cache-Control", "no-cache")
		return c.HTMLBlob(http.StatusOK, b)
	})
	// config.js tells the page where the Temporal UI is (TICKGATE_TEMPORAL_UI, default the
	// dev server's) so each row can link to its workflow.
	uiURL := os.Getenv("TICKGATE_TEMPORAL_UI")
	if uiURL == "" {
		uiURL = "http://127.0.0.1:8233"
	}
	ns := os.Getenv("TEMPORAL_NAMESPACE")
	if ns == "" {
		ns = "default"
	}
	// traceURL is the trace viewer's address of a trace ({trace_id} in it), for the runs
	// that recorded one (Server.TraceURL).
	conf, _ := json.Marshal(map[string]string{"temporalUI": strings.TrimRight(uiURL, "/"), "namespace": ns, "traceURL": s.TraceURL})
	configJS := []byte("window.TICKGATE = " + string(conf) + ";\n")
	fileHandler := echo.WrapHandler(http.StripPrefix("/ui/", files))
	e.GET("/ui/*", func(c echo.Context) error {
		name := c.Param("*")
		if name == "config.js" {
			return c.Blob(http.StatusOK, "text/javascript; charset=utf-8", configJS)
		}
		// Only the assets themselves: a missing one is a 404 problem like any other (not
		// the file server's text page), and the directory is not listed.
		if info, err := fs.Stat(static, name); err != nil || info.IsDir() {
			return NotFound("no dashboard file %q", name)
		}
		return fileHandler(c)
	})
}
