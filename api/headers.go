package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// ContentSecurityPolicy is sent on every answer. The dashboard loads its scripts and styles
// from this origin only and inlines none (no <script> bodies, no style or on* attributes),
// so an injected one runs nowhere; no page may frame it. An API answer is not a document
// a browser renders, and the same policy costs it nothing.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// securityHeaders sets the defence-in-depth headers before anything else runs, so errors,
// 404s and HEAD answers carry them too: the dashboard keeps an admin token in the
// browser's storage.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		return next(c)
	}
}

// answerHeadLikeGet registers a HEAD route beside every GET route added to e afterwards,
// with the same handler and middleware (and so the same permission, see authenticate):
// monitors probe with HEAD. net/http sends the headers and drops the body.
func answerHeadLikeGet(e *echo.Echo) {
	e.OnAddRouteHandler = func(_ string, r echo.Route, h echo.HandlerFunc, m []echo.MiddlewareFunc) {
		if r.Method == http.MethodGet {
			e.Add(http.MethodHead, r.Path, h, m...)
		}
	}
}
