package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
)

// MaxBodyBytes caps every request body (1 MiB).
const MaxBodyBytes = 1 << 20

// Decode reads the JSON body into dst strictly: unknown fields, wrong types, trailing data
// and oversized bodies are 4xx problems naming the field. An empty body decodes as {} when
// allowEmpty is set.
func Decode(c echo.Context, dst any, allowEmpty bool) error {
	body, err := ReadBody(c, allowEmpty)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		p := decodeProblem(err)
		if p.Field != "" && strings.HasPrefix(err.Error(), "json: unknown field ") {
			// json names the unknown key alone: find where it is ("strategy.health.retries").
			if path := unknownFieldPath(body, reflect.TypeOf(dst), "", p.Field); path != "" {
				p.Field = path
			}
		}
		var fe fieldError
		switch {
		case p.Field == "":
			// Errors raised by a field's own UnmarshalJSON (a bad time, say) carry no path:
			// find the field by decoding the body's fields one by one.
			p.Field = locateField(body, reflect.TypeOf(dst), "")
		case errors.As(err, &fe):
			// A field's own UnmarshalJSON names its path from the value it decodes
			// ("spec.interval" of a schedule): inside a list ("items[3]" of a bulk create)
			// the path from the body's root is longer.
			if full := locateField(body, reflect.TypeOf(dst), ""); strings.HasSuffix(full, "."+p.Field) {
				p.Field = full
			}
		}
		return p
	}
	// Only whitespace may follow the value. (dec.More() would not do: it is false before a
	// ']' or '}', so `{...}}` passed.)
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return BadRequest("", "unexpected data after the JSON object")
	}
	return nil
}

// ReadBody reads a JSON request body, refusing another content type and an oversized or
// (unless allowEmpty, then it reads as {}) empty one.
func ReadBody(c echo.Context, allowEmpty bool) ([]byte, error) {
	req := c.Request()
	if ct := req.Header.Get(echo.HeaderContentType); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, NewProblem(http.StatusUnsupportedMediaType, "", "send application/json, not %q", ct)
		}
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, BadRequest("", "read body: %v", err)
	}
	if len(body) > MaxBodyBytes {
		return nil, NewProblem(http.StatusRequestEntityTooLarge, "", "body larger than %d bytes", MaxBodyBytes)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if !allowEmpty {
			return nil, BadRequest("", "request body is required")
		}
		body = []byte("{}")
	}
	return body, nil
}

type fieldError interface {
	error
	FieldName() string
}

func decodeProblem(err error) *Problem {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	var fe fieldError
	switch {
	case errors.As(err, &typeErr):
		return BadRequest(typeErr.Field, "wrong type: got JSON %s, want %s", typeErr.Value, typeErr.Type)
	case errors.As(err, &syntaxErr):
		return BadRequest("", "malformed JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)
	case errors.As(err, &fe):
		return BadRequest(fe.FieldName(), "%v", fe)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// json quotes the key with %q: unquote it, or a key holding a quote, a backslash or a
		// control character would be named in its escaped form.
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		if unq, uerr := strconv.Unquote(name); uerr == nil {
			name = unq
		}
		return BadRequest(name, "unknown field %q", name)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return BadRequest("", "malformed JSON: unexpected end of input")
	}
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	return BadRequest("", "invalid JSON: %v", err)
}

// locateField returns the JSON path of the first field of body that does not decode into
// its field of type t, or "".
func locateField(body []byte, t reflect.Type, prefix string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice && t != reflect.TypeFor[json.RawMessage]() {
		var items []json.RawMessage
		if json.Unmarshal(body, &items) != nil {
			return ""
		}
		for i, item := range items {
			if json.Unmarshal(item, reflect.New(t.Elem()).Interface()) != nil {
				at := fmt.Sprintf("%s[%d]", strings.TrimSuffix(prefix, "."), i)
				if inner := locateField(item, t.Elem(), at+"."); inner != "" {
					return inner
				}
				return at
			}
		}
		return ""
	}
	if t.Kind() != reflect.Struct {
		return ""
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return ""
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		raw, ok := fields[name]
		if !ok {
			// json matches a key to its field case-insensitively when none matches exactly.
			for key, v := range fields {
				if strings.EqualFold(key, name) {
					raw, ok = v, true
					break
				}
			}
		}
		if !ok {
			continue
		}
		if json.Unmarshal(raw, reflect.New(f.Type).Interface()) != nil {
			if inner := locateField(raw, f.Type, prefix+name+"."); inner != "" {
				return inner
			}
			return prefix + name
		}
	}
	return ""
}

// unknownFieldPath returns the JSON path of the first key named name that is not a field
// of the struct it sits in, walking body along type t (structs, pointers, slices), or "".
func unknownFieldPath(body []byte, t reflect.Type, prefix, name string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(body, &items) != nil {
			return ""
		}
		for i, item := range items {
			if p := unknownFieldPath(item, t.Elem(), fmt.Sprintf("%s[%d].", strings.TrimSuffix(prefix, "."), i), name); p != "" {
				return p
			}
		}
		return ""
	case reflect.Struct:
	default:
		return ""
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return ""
	}
	known := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		known[strings.ToLower(tag)] = f.Type
	}
	for key, raw := range fields {
		ft, ok := known[strings.ToLower(key)]
		if !ok {
			if key == name {
				return prefix + key
			}
			continue
		}
		if p := unknownFieldPath(raw, ft, prefix+key+".", name); p != "" {
			return p
		}
	}
	return ""
}

// Page is the common list answer.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// Limit reads ?limit= (default 50, 1..500).
func Limit(c echo.Context) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return 50, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 500 {
		return 0, BadRequest("limit", "must be an integer from 1 to 500, got %q", v)
	}
	return n, nil
}

// EncodeCursor makes an opaque cursor from a position string.
func EncodeCursor(pos string) string {
	if pos == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(pos))
}

// DecodeCursor reads ?cursor= back into its position string ("" when absent).
func DecodeCursor(c echo.Context) (string, error) {
	v := c.QueryParam("cursor")
	if v == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	// Every position is text (a name or a number): bytes that are not could only fail in
	// the database.
	if err != nil || !readable(string(b)) {
		return "", BadRequest("cursor", "not a cursor from next_cursor")
	}
	return string(b), nil
}

// CursorInt reads a cursor holding an integer position (0 when absent).
func CursorInt(c echo.Context) (int64, error) {
	pos, err := DecodeCursor(c)
	if err != nil || pos == "" {
		return 0, err
	}
	n, err := strconv.ParseInt(pos, 10, 64)
	if err != nil {
		return 0, BadRequest("cursor", "not a cursor from next_cursor")
	}
	return n, nil
}

// IntCursor encodes an integer position.
func IntCursor(n int64) string { return EncodeCursor(fmt.Sprint(n)) }

// newPage maps rows to their views. Callers fetch limit+1 rows: the extra row only says a
// next page exists, and next_cursor is cursor(last row shown).
func newPage[R, V any](rows []R, limit int, view func(R) V, cursor func(R) string) Page[V] {
	page := Page[V]{Items: make([]V, 0, min(len(rows), limit))}
	for i, r := range rows {
		if i == limit {
			page.NextCursor = cursor(rows[limit-1])
			break
		}
		page.Items = append(page.Items, view(r))
	}
	return page
}

// readableParams refuses a request whose path parameters are not valid UTF-8 or hold a NUL
// byte, naming the parameter: PostgreSQL's text refuses both, so such a name or serial
// would otherwise fail inside a query as a 500. (Query values are checked by their
// readers: Limit, DecodeCursor and each handler's filters.)
func readableParams(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		values := c.ParamValues()
		for i, name := range c.ParamNames() {
			if i < len(values) && !readable(values[i]) {
				return BadRequest(paramField(name), "path parameter %q is not valid UTF-8 text", paramField(name))
			}
		}
		return next(c)
	}
}

func readable(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// paramField names a path parameter as the document does (Echo's "*" is the dashboard's file).
func paramField(name string) string {
	if name == "*" {
		return "file"
	}
	return name
}
