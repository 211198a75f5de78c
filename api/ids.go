package api

import (
	"strconv"

	"github.com/labstack/echo/v4"
)

// pathID reads the :id path parameter of a resource called what, the same way on every
// route: an id that is not a positive 64-bit integer is a malformed request (400 naming the
// path parameter), while a well-formed id that names nothing is the lookup's 404.
func pathID(c echo.Context, what string) (int64, error) {
	raw := c.Param("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, BadRequest("id", "a %s id is a positive integer, got %q", what, raw)
	}
	return id, nil
}
