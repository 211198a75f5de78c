package teststack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/tickgate/tickgate/api"
)

// The contract check: every answer a test receives through ContractClient (and so through
// Stack.Do and Stack.JSON) is validated against api/openapi.yaml by kin-openapi, so an
// answer that drifts from the document fails the test that received it.

// SecurityHeaders are the headers every answer carries (API, dashboard, errors, HEAD).
var SecurityHeaders = []string{"Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy"}

type contract struct {
	doc    *openapi3.T
	router routers.Router
}

var loadContract = sync.OnceValues(func() (*contract, error) {
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPIDocument)
	if err != nil {
		return nil, fmt.Errorf("load api/openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("validate api/openapi.yaml: %w", err)
	}
	closeObjects(doc)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route api/openapi.yaml: %w", err)
	}
	// The dashboard's page is HTML: read it as text, as its schema (a string) says.
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	return &contract{doc: doc, router: router}, nil
})

// closeObjects makes every object schema that lists its properties and says nothing of
// others refuse unknown ones, for the tests only: an answer carrying a field the document
// does not name is drift too. (Members of an allOf stay open: each sees the others' fields.)
func closeObjects(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	var walk func(ref *openapi3.SchemaRef, inAllOf bool)
	walk = func(ref *openapi3.SchemaRef, inAllOf bool) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		if !inAllOf && len(s.Properties) > 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
			s.AdditionalProperties = openapi3.AdditionalProperties{Has: openapi3.Ptr(false)}
		}
		for _, p := range s.Properties {
			walk(p, false)
		}
		walk(s.Items, false)
		walk(s.AdditionalProperties.Schema, false)
		for _, m := range s.OneOf {
			walk(m, false)
		}
		for _, m := range s.AnyOf {
			walk(m, false)
		}
		for _, m := range s.AllOf {
			walk(m, true)
		}
	}
	for _, s := range doc.Components.Schemas {
		walk(s, false)
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, r := range op.Responses.Map() {
				if r.Value == nil {
					continue
				}
				for _, mt := range r.Value.Content {
					walk(mt.Schema, false)
				}
			}
		}
	}
}

// CheckAnswer says how an answer breaks api/openapi.yaml, or nil: its status must be one
// the operation documents, its body must match that response's schema (formats included),
// a problem's status must be the answer's (HEAD: GET's statuses and headers), and every answer
// carries SecurityHeaders. A request no operation matches must get a 404 or 405 problem (or
// a 401 when it has no valid token).
func CheckAnswer(req *http.Request, status int, header http.Header, body []byte) error {
	c, err := loadContract()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range SecurityHeaders {
		if header.Get(h) == "" {
			errs = append(errs, fmt.Errorf("header %s missing", h))
		}
	}
	if err := checkProblemStatus(status, header, body); err != nil {
		errs = append(errs, err)
	}
	// HEAD is answered wherever GET is, with GET's status and headers and no body; the
	// document lists the GET operations only.
	asked := req.Clone(req.Context())
	head := req.Method == http.MethodHead
	if head {
		asked.Method = http.MethodGet
	}
	route, pathParams, err := c.router.FindRoute(asked)
	switch {
	case errors.Is(err, routers.ErrPathNotFound), errors.Is(err, routers.ErrMethodNotAllowed):
		// The token is checked before routing: without one, no route is revealed (401).
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed && status != http.StatusUnauthorized {
			errs = append(errs, fmt.Errorf("no documented operation %s %s, yet it answered %d", req.Method, req.URL.Path, status))
		} else if !head {
			if err := c.problem(body); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	case err != nil:
		return errors.Join(append(errs, fmt.Errorf("route %s %s: %w", req.Method, req.URL.Path, err))...)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: asked, PathParams: pathParams, Route: route},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus:   true,
			ExcludeResponseBody:     head,
			MultiError:              true,
			SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.EnableFormatValidation()},
		},
	}
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// problem validates body against the Problem schema.
func (c *contract) problem(body []byte) error {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("problem body is not JSON: %w", err)
	}
	return c.doc.Components.Schemas["Problem"].Value.VisitJSON(v, openapi3.MultiErrors())
}

// checkProblemStatus: a problem+json body's status is the answer's status.
func checkProblemStatus(status int, header http.Header, body []byte) error {
	if !strings.HasPrefix(header.Get("Content-Type"), "application/problem+json") || len(body) == 0 {
		return nil
	}
	var p struct {
		Status int `json:"status"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return fmt.Errorf("problem body is not JSON: %w", err)
	}
	if p.Status != status {
		return fmt.Errorf("problem says status %d, the answer is %d", p.Status, status)
	}
	return nil
}

// ContractClient is an HTTP client whose every answer is checked with CheckAnswer; an
// answer that breaks the document fails t (the test goes on, with the answer as received).
func ContractClient(t testing.TB) *http.Client {
	return &http.Client{Transport: contractTransport{t: t, next: http.DefaultTransport}}
}

type contractTransport struct {
	t    testing.TB
	next http.RoundTripper
}

func (ct contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := ct.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read answer of %s %s: %w", req.Method, req.URL, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err := CheckAnswer(req, resp.StatusCode, resp.Header, body); err != nil {
		ct.t.Errorf("%s %s answered %d against api/openapi.yaml: %v\nbody: %.2000s", req.Method, req.URL.RequestURI(), resp.StatusCode, err, body)
	}
	return resp, nil
}
