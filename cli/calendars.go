package cli

import (
	"encoding/json"
	"flag"
	"strings"
)

var (
	calendarCols = []col{{"NAME", "name"}, {"TIMEZONE", "timezone"}, {"DATES", "dates"}, {"RANGES", "ranges"}, {"VERSION", "version"}}
	calendarRec  = []col{{"name", "name"}, {"timezone", "timezone"}, {"dates", "dates"}, {"ranges", "ranges"}, {"version", "version"},
		{"used_by", "used_by"}, {"used_by_count", "used_by_count"}, {"rejudged", "rejudged"}, {"updated_at", "updated_at"}}
)

// calendarOps are `tickgate calendar …`: the calendars schedules exclude
// (docs/schedules.md "Calendars").
var calendarOps = map[string]op{
	"list":   listOp("[--limit N] [--all]", "/api/v1/calendars", calendarCols),
	"get":    simple("NAME", 1, "GET", func(a []string) string { return "/api/v1/calendars/" + esc(a[0]) }, calendarRec),
	"delete": simple("NAME", 1, "DELETE", func(a []string) string { return "/api/v1/calendars/" + esc(a[0]) }, calendarRec),
	"create": {usage: "NAME [--timezone TZ] [--dates 2026-12-25,…] [--range START/END …] | -f FILE | --json TEXT",
		flags: calendarBody("POST", false)},
	"update": {usage: "NAME [--timezone TZ] [--dates …] [--range START/END …] [--version N] | -f FILE | --json TEXT   (replaces the calendar)",
		flags: calendarBody("PUT", true)},
}

// calendarBody reads a calendar from flags (or a whole body from -f/--json) and sends it:
// a create (POST /calendars) or a replacement (PUT /calendars/NAME).
func calendarBody(method string, replace bool) func(fs *flag.FlagSet) func(c *cmd) error {
	return func(fs *flag.FlagSet) func(c *cmd) error {
		file := fs.String("f", "", "request body from a JSON file (- for stdin)")
		text := fs.String("json", "", "request body as JSON text")
		tz := fs.String("timezone", "", "IANA time zone of its dates (default UTC)")
		dates := fs.String("dates", "", "whole days, comma-separated (2026-12-25,2026-12-26)")
		var ranges rangeFlags
		fs.Var(&ranges, "range", "a range START/END (RFC 3339 times or dates); repeat for more")
		version := fs.Int64("version", 0, "update: the version the change expects")
		return func(c *cmd) error {
			if err := c.want(1, "NAME"); err != nil {
				return err
			}
			path := "/api/v1/calendars"
			if replace {
				path += "/" + esc(c.args[0])
			}
			body, err := jsonBody(*file, *text)
			if err != nil {
				return err
			}
			if body != nil {
				var m map[string]any
				if err := json.Unmarshal(body, &m); err != nil {
					return usagef("calendar: the body is not a JSON object: %v", err)
				}
				if _, ok := m["name"]; !ok {
					m["name"] = c.args[0]
				}
				return c.call(method, path, m, calendarRec)
			}
			req := map[string]any{"name": c.args[0], "dates": []string{}, "ranges": append([]map[string]string{}, ranges.items...)}
			if *tz != "" {
				req["timezone"] = *tz
			}
			if *dates != "" {
				req["dates"] = strings.Split(*dates, ",")
			}
			if *version != 0 {
				req["version"] = *version
			}
			return c.call(method, path, req, calendarRec)
		}
	}
}

// rangeFlags collects repeated --range START/END flags.
type rangeFlags struct{ items []map[string]string }

func (r *rangeFlags) String() string { return "" }

func (r *rangeFlags) Set(v string) error {
	start, end, ok := strings.Cut(v, "/")
	if !ok {
		return usagef("--range wants START/END, got %q", v)
	}
	r.items = append(r.items, map[string]string{"start": start, "end": end})
	return nil
}
