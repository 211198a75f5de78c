package api

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// OpenAPIDocument is the API contract (OpenAPI 3), served at /api/v1/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPIDocument []byte

func (s *Server) registerOpenAPI(g *echo.Group) {
	g.GET("/openapi.yaml", func(c echo.Context) error {
		return c.Blob(http.StatusOK, "application/yaml", OpenAPIDocument)
	})
}
