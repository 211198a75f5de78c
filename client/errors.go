package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Error is an answer that is not 2xx: the API's problem+json (RFC 9457). Field names the
// request field the server refused (such as "spec.cron" or "items[3].name"), when it names
// one.
type Error struct {
	Status int    `json:"status"`
	Type   string `json:"type,omitempty"`
	Title  string `json:"title"`
	Detail string `json:"detail,omitempty"`
	Field  string `json:"field,omitempty"`
	// RetryAfter is the answer's Retry-After header, when it had one (a 503 or a 429).
	RetryAfter string `json:"-"`
	// ContentType is the answer's (application/problem+json from the API itself).
	ContentType string `json:"-"`
	// Body is the answer as it came, for a body that was not problem+json.
	Body []byte `json:"-"`
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%d %s", e.Status, e.Title)
	if e.Field != "" {
		msg += ": " + e.Field
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// errorOf reads an answer that is not 2xx into an *Error.
func errorOf(resp *http.Response) *Error {
	body := readBody(resp)
	e := &Error{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode), Body: body,
		RetryAfter: resp.Header.Get("Retry-After"), ContentType: resp.Header.Get("Content-Type")}
	if len(body) > 0 && json.Valid(body) {
		var p Error
		if json.Unmarshal(body, &p) == nil {
			if p.Title != "" {
				e.Title = p.Title
			}
			e.Type, e.Detail, e.Field = p.Type, p.Detail, p.Field
		}
	} else if len(body) > 0 && e.Detail == "" {
		e.Detail = strings.TrimSpace(string(body[:min(len(body), 512)]))
	}
	return e
}
