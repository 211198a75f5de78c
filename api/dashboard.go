package api

import (
	"io/fs"
	"net/http"

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
	e.GET("/ui/*", echo.WrapHandler(http.StripPrefix("/ui/", files)))
}
