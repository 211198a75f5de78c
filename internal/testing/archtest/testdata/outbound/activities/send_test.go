package activities

import "net/http"

var testClient = &http.Client{} // a test may build what it needs
