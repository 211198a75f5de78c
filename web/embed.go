// Package web holds the dashboard's static files (HTML, CSS, JavaScript), embedded in the
// binary and served by the API at / — no CDN, no build step.
package web

import "embed"

// Static is the dashboard: static/index.html and its assets.
//
//go:embed static
var Static embed.FS
