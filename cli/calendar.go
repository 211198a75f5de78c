package cli

import (
	"encoding/json"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tickgate/tickgate/client"
)

// `tickgate calendar …`: the calendars schedules exclude (docs/schedules.md "Calendars").

var (
	calendarCols = []col{{"NAME", "name"}, {"TIMEZONE", "timezone"}, {"DATES", "dates"}, {"RANGES", "ranges"}, {"VERSION", "version"}}
	calendarRec  = []col{{"name", "name"}, {"timezone", "timezone"}, {"dates", "dates"}, {"ranges", "ranges"}, {"version", "version"},
		{"used_by", "used_by"}, {"used_by_count", "used_by_count"}, {"rejudged", "rejudged"}, {"updated_at", "updated_at"}}
)

func calendarCmd(a *app) *cobra.Command {
	return group("calendar", "Manage the calendars schedules exclude: list, get, create, update, delete",
		calendarListCmd(a), calendarGetCmd(a), calendarDeleteCmd(a), calendarBodyCmd(a, false), calendarBodyCmd(a, true))
}

func calendarListCmd(a *app) *cobra.Command {
	var lf *listFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List calendars by name",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.list(lf, func(cursor *string, limit int) ([]byte, error) {
				r, err := a.api.ListCalendarsWithResponse(a.ctx, &client.ListCalendarsParams{Cursor: cursor, Limit: &limit})
				if err != nil {
					return nil, err
				}
				return r.Body, nil
			}, calendarCols)
		},
	}
	lf = addListFlags(cmd)
	return cmd
}

func calendarGetCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "get NAME",
		Short:             "A calendar, with the schedules that exclude it",
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: a.completeCalendars,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := a.api.GetCalendarWithResponse(a.ctx, args[0])
			if err != nil {
				return err
			}
			return a.show(r.Body, calendarRec)
		},
	}
}

func calendarDeleteCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "delete NAME",
		Short:             "Delete a calendar no schedule excludes",
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: a.completeCalendars,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := a.api.DeleteCalendarWithResponse(a.ctx, args[0])
			if err != nil {
				return err
			}
			return a.show(r.Body, calendarRec)
		},
	}
}

// calendarBodyCmd reads a calendar from flags (or a whole body from -f/--json) and sends
// it: a create (POST /calendars) or a replacement (PUT /calendars/NAME).
func calendarBodyCmd(a *app, replace bool) *cobra.Command {
	var file, text, tz, dates string
	var ranges rangeFlags
	var version int64
	use, short := "create NAME [--timezone TZ] [--dates 2026-12-25,…] [--range START/END …] | -f FILE | --json TEXT", "Create a calendar"
	if replace {
		use, short = "update NAME [--timezone TZ] [--dates …] [--range START/END …] [--version N] | -f FILE | --json TEXT", "Replace a calendar's time zone, dates and ranges"
	}
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Example: `  tickgate calendar create holidays-fr --timezone Europe/Paris --dates 2026-12-25,2027-01-01 --range 2026-12-31T18:00:00+01:00/2027-01-01`,
		Args:    exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := a.jsonBody(file, text)
			if err != nil {
				return err
			}
			var req map[string]any
			if body != nil {
				if err := json.Unmarshal(body, &req); err != nil {
					return usagef("calendar: the body is not a JSON object: %v", err)
				}
				if _, ok := req["name"]; !ok {
					req["name"] = args[0]
				}
			} else {
				req = map[string]any{"name": args[0], "dates": []string{}, "ranges": append([]map[string]string{}, ranges.items...)}
				if tz != "" {
					req["timezone"] = tz
				}
				if dates != "" {
					req["dates"] = strings.Split(dates, ",")
				}
				if version != 0 {
					req["version"] = version
				}
			}
			rd, _ := jsonReader(req)
			var raw []byte
			if replace {
				r, err := a.api.ReplaceCalendarWithBodyWithResponse(a.ctx, args[0], nil, "application/json", rd)
				if err != nil {
					return err
				}
				raw = r.Body
			} else {
				r, err := a.api.CreateCalendarWithBodyWithResponse(a.ctx, nil, "application/json", rd)
				if err != nil {
					return err
				}
				raw = r.Body
			}
			return a.show(raw, calendarRec)
		},
	}
	if replace {
		cmd.ValidArgsFunction = a.completeCalendars
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "request body from a JSON file (- for stdin)")
	f.StringVar(&text, "json", "", "request body as JSON text")
	f.StringVar(&tz, "timezone", "", "IANA time zone of its dates (default UTC)")
	f.StringVar(&dates, "dates", "", "whole days, comma-separated (2026-12-25,2026-12-26)")
	f.Var(&ranges, "range", "a range START/END (RFC 3339 times or dates); repeat for more")
	f.Int64Var(&version, "version", 0, "update: the version the change expects")
	return cmd
}
