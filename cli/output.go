package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// col is one table column: a header and a dotted path into the JSON object.
type col struct {
	Header string
	Path   string
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

// record prints one object as FIELD  VALUE lines, the given fields first, then nested
// lists as tables when cols for them are known.
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
