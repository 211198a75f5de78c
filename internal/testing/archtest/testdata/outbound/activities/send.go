package activities

import (
	"net/http"
	web "net/http"
)

// Every way the product could send a request the outbound rule never sees.
var zero http.Client // zero client

func send(url string) {
	c := &http.Client{}                // client literal
	t := &web.Transport{}              // transport literal, aliased import
	n := new(http.Client)              // new client
	_, _ = http.Get(url)               // the default client, implicitly
	_, _ = http.DefaultClient.Get(url) // the default client
	_ = http.DefaultTransport          // the default transport
	_, _, _, _ = c, t, n, zero
}

// injected is fine: a client handed in is the constructor's.
func injected(c *http.Client, url string) { _, _ = c.Get(url) }
