package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// The request bodies and repeatable flags commands share.

// jsonBody reads a request body from -f FILE ("-" is stdin) or --json TEXT (nil: neither).
func (a *app) jsonBody(file, text string) ([]byte, error) {
	switch {
	case file != "" && text != "":
		return nil, usagef("give -f or --json, not both")
	case file == "-":
		return io.ReadAll(a.env.Stdin)
	case file != "":
		b, err := os.ReadFile(file) // #nosec G304 -- the file the user names
		if err != nil {
			return nil, usagef("read %s: %v", file, err)
		}
		return b, nil
	case text != "":
		return []byte(text), nil
	}
	return nil, nil
}

// rawJSON parses a flag holding JSON.
func rawJSON(name, v string) (json.RawMessage, error) {
	if v == "" {
		return nil, nil
	}
	if !json.Valid([]byte(v)) {
		return nil, usagef("--%s is not valid JSON: %s", name, v)
	}
	return json.RawMessage(v), nil
}

// jsonReader is a body for a generated ...WithBody call.
func jsonReader(v any) (io.Reader, error) {
	if b, ok := v.([]byte); ok {
		return bytes.NewReader(b), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(b), nil
}

// labelFlags collects repeated --label key=value flags into the labels object.
type labelFlags map[string]string

func (l labelFlags) String() string {
	parts := make([]string, 0, len(l))
	for _, k := range sortedKeys(l) {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}

func (l labelFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return usagef("--label %q: want key=value", s)
	}
	l[k] = v
	return nil
}

func (l labelFlags) Type() string { return "key=value" }

// listFlag collects a repeatable flag's values.
type listFlag []string

func (h *listFlag) String() string     { return strings.Join(*h, ", ") }
func (h *listFlag) Set(v string) error { *h = append(*h, v); return nil }
func (h *listFlag) Type() string       { return "K=V" }

// rangeFlags collects repeated --range START/END flags.
type rangeFlags struct{ items []map[string]string }

func (r *rangeFlags) String() string { return "" }
func (r *rangeFlags) Type() string   { return "START/END" }

func (r *rangeFlags) Set(v string) error {
	start, end, ok := strings.Cut(v, "/")
	if !ok {
		return usagef("--range wants START/END, got %q", v)
	}
	r.items = append(r.items, map[string]string{"start": start, "end": end})
	return nil
}

// windowFlags collects --window "CRON|DURATION[|TZ]" into the API's windows.
type windowFlags []map[string]string

func (w *windowFlags) String() string { return "" }
func (w *windowFlags) Type() string   { return "CRON|DURATION[|TZ]" }

func (w *windowFlags) Set(v string) error {
	parts := strings.Split(v, "|")
	if len(parts) < 2 || len(parts) > 3 {
		return fmt.Errorf(`want "CRON|DURATION" or "CRON|DURATION|TIMEZONE", got %q`, v)
	}
	win := map[string]string{"cron": strings.TrimSpace(parts[0]), "duration": strings.TrimSpace(parts[1])}
	if len(parts) == 3 {
		win["timezone"] = strings.TrimSpace(parts[2])
	}
	*w = append(*w, win)
	return nil
}
