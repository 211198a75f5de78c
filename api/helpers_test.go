package api_test

import (
	"io"
	"net/http"
	"strings"
)

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

func readAll(resp *http.Response) ([]byte, error) { return io.ReadAll(resp.Body) }
