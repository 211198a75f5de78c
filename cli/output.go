package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// col is one table column: a header and a dotted path into the JSON object.
type col struct {
	Header string
	Path   string
}

// show prints one answer (JSON): as FIELD VALUE lines, or as JSON or YAML with -o.
func (a *app) show(raw []byte, fields []col) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if a.output != "table" {
		return a.printRaw(raw)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	record(a.env.Stdout, fields, obj)
	return nil
}

// printRaw prints a JSON answer as indented JSON, or as YAML with -o yaml.
func (a *app) printRaw(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		_, err = a.env.Stdout.Write(append(raw, '\n'))
		return err
	}
	return a.printValue(numbers(v))
}

// printValue prints a value as -o asks: JSON, or YAML (table callers print themselves).
func (a *app) printValue(v any) error {
	if a.output == "yaml" {
		return writeYAML(a.env.Stdout, v)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.env.Stdout, "%s\n", b)
	return err
}

// writeYAML writes v as one YAML document, indented by two.
func writeYAML(w io.Writer, v any) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return enc.Close()
}

// numbers turns the json.Numbers of a decoded document into int64 or float64, so YAML shows
// 1767225600 as such (not 1.7672256e+09, nor as a quoted string).
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}

// listFlags are the pagination flags of a list.
type listFlags struct {
	limit  int
	cursor string
	all    bool
}

func addListFlags(cmd *cobra.Command) *listFlags {
	l := &listFlags{}
	cmd.Flags().IntVar(&l.limit, "limit", 50, "items per page (1-500)")
	cmd.Flags().StringVar(&l.cursor, "cursor", "", "start at this next_cursor")
	cmd.Flags().BoolVar(&l.all, "all", false, "follow next_cursor to the last page")
	return l
}

// fetchPage reads one page of a list (cursor nil: the first) and answers its raw body.
type fetchPage func(cursor *string, limit int) ([]byte, error)

// list reads one page (every page with --all) and prints a table, or {"items", "next_cursor"}
// with -o json|yaml.
func (a *app) list(l *listFlags, fetch fetchPage, cols []col) error {
	var cursor *string
	if l.cursor != "" {
		cursor = &l.cursor
	}
	var items []json.RawMessage
	next := ""
	for {
		raw, err := fetch(cursor, l.limit)
		if err != nil {
			return err
		}
		var page struct {
			Items      []json.RawMessage `json:"items"`
			NextCursor string            `json:"next_cursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return fmt.Errorf("decode answer: %w", err)
		}
		items = append(items, page.Items...)
		next = page.NextCursor
		if !l.all || next == "" {
			break
		}
		cursor = &next
	}
	if items == nil {
		items = []json.RawMessage{}
	}
	if a.output != "table" {
		b, _ := json.Marshal(map[string]any{"items": items, "next_cursor": next})
		return a.printRaw(b)
	}
	objs := make([]map[string]any, 0, len(items))
	for _, it := range items {
		var m map[string]any
		if err := json.Unmarshal(it, &m); err != nil {
			return fmt.Errorf("decode answer: %w", err)
		}
		objs = append(objs, m)
	}
	table(a.env.Stdout, cols, objs)
	if next != "" {
		fmt.Fprintf(a.env.Stderr, "more: --cursor %s (or --all)\n", next)
	}
	return nil
}

// lookup reads a dotted path; a last part "#" is the length of the list before it.
func lookup(obj map[string]any, path string) any {
	var cur any = obj
	for _, part := range strings.Split(path, ".") {
		if part == "#" {
			list, _ := cur.([]any)
			return float64(len(list))
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		if x == "" {
			return "-"
		}
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil && len(x) >= 20 {
			return t.UTC().Format("2006-01-02 15:04:05Z")
		}
		return x
	case float64:
		if x == float64(int64(x)) {
			return fmt.Sprint(int64(x))
		}
		return fmt.Sprintf("%.1f", x)
	case bool:
		return fmt.Sprint(x)
	case map[string]any:
		// An object that says itself in words (a waiting cause, a freeze) shows those.
		if msg, ok := x["message"].(string); ok && msg != "" {
			return msg
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, k+"="+cell(x[k]))
		}
		return strings.Join(parts, " ")
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// table prints items as aligned columns.
func table(w io.Writer, cols []col, items []map[string]any) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	heads := make([]string, len(cols))
	for i, c := range cols {
		heads[i] = c.Header
	}
	fmt.Fprintln(tw, strings.Join(heads, "\t"))
	for _, it := range items {
		row := make([]string, len(cols))
		for i, c := range cols {
			row[i] = strings.ReplaceAll(cell(lookup(it, c.Path)), "\t", " ")
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush()
}

// record prints one object as FIELD  VALUE lines.
func record(w io.Writer, fields []col, obj map[string]any) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range fields {
		fmt.Fprintf(tw, "%s\t%s\n", f.Header, strings.ReplaceAll(cell(lookup(obj, f.Path)), "\t", " "))
	}
	_ = tw.Flush()
}

// progressBar draws [#####.....] for done of total.
func progressBar(done, total int64, width int) string {
	if total <= 0 {
		return "[" + strings.Repeat(".", width) + "]   0%"
	}
	n := int(done * int64(width) / total)
	return fmt.Sprintf("[%s%s] %3d%%", strings.Repeat("#", n), strings.Repeat(".", width-n), done*100/total)
}

// counts prints a status→count map in a stable order, zeroes left out.
func counts(m map[string]int64) string {
	parts := []string{}
	for _, k := range sortedKeys(m) {
		if m[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
		}
	}
	return strings.Join(parts, " ")
}
