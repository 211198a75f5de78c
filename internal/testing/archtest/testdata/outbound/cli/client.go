package cli

import "net/http"

var api = &http.Client{} // exempt: the CLI talks to tickgate's own API
