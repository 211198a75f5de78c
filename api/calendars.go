package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
)

// Calendars (docs/schedules.md "Calendars"): named days and ranges that schedules exclude
// with spec.exclude_calendars. An edit takes effect for every schedule excluding the
// calendar at once, for every tick no release has made true yet.

// registerCalendars mounts /calendars.
func (s *Server) registerCalendars(g *echo.Group) {
	g.POST("/calendars", s.createCalendar)
	g.GET("/calendars", s.listCalendars)
	g.GET("/calendars/:name", s.getCalendar)
	g.PUT("/calendars/:name", s.putCalendar)
	g.DELETE("/calendars/:name", s.deleteCalendar)
}

// CalendarRequest is the body of POST /calendars and PUT /calendars/{name} (where name may
// be left out; version, or If-Match, makes a PUT optimistic).
type CalendarRequest struct {
	Name     string                       `json:"name"`
	Timezone string                       `json:"timezone,omitempty"`
	Dates    []string                     `json:"dates"`
	Ranges   []schedulespec.CalendarRange `json:"ranges"`
	Version  int64                        `json:"version,omitempty"`
}

// CalendarView is a calendar as the API answers it.
type CalendarView struct {
	Name      string                       `json:"name"`
	Timezone  string                       `json:"timezone"`
	Dates     []string                     `json:"dates"`
	Ranges    []schedulespec.CalendarRange `json:"ranges"`
	Version   int64                        `json:"version"`
	CreatedAt time.Time                    `json:"created_at"`
	UpdatedAt time.Time                    `json:"updated_at"`
	// UsedBy (on GET /calendars/{name}) names schedules excluding it (the first 20 by name)
	// and UsedByCount counts them.
	UsedBy      []string `json:"used_by,omitempty"`
	UsedByCount *int64   `json:"used_by_count,omitempty"`
	// Rejudged (on PUT) counts the fires armed ahead, not yet released, that the edit turned:
	// now SKIPPED, or firing after all.
	Rejudged *CalendarRejudged `json:"rejudged,omitempty"`
}

// CalendarRejudged counts what an edit did to the fires armed ahead.
type CalendarRejudged struct {
	Skipped int `json:"skipped"`
	Fired   int `json:"fired"`
}

// maxCalendarUsersShown is how many schedules a calendar's view (and a refused delete) names.
const maxCalendarUsersShown = 20

func calendarView(row store.Calendar) CalendarView {
	v := CalendarView{Name: row.Name, Timezone: row.Timezone, Dates: row.Dates, Version: row.Version,
		CreatedAt: row.CreatedAt.UTC(), UpdatedAt: row.UpdatedAt.UTC(), Ranges: []schedulespec.CalendarRange{}}
	if v.Dates == nil {
		v.Dates = []string{}
	}
	_ = json.Unmarshal(row.Ranges, &v.Ranges)
	return v
}

// compileCalendars compiles calendars rows, by name (schedulespec.CompileStored).
func compileCalendars(rows []store.Calendar) (map[string]*schedulespec.CompiledCalendar, error) {
	return schedulespec.CompileStored(rows, func(r store.Calendar) schedulespec.StoredCalendar {
		return schedulespec.StoredCalendar{Name: r.Name, Timezone: r.Timezone, Dates: r.Dates, Ranges: r.Ranges}
	})
}

// validate checks a calendar's body and returns it as stored.
func (req CalendarRequest) validate() (store.NewCalendar, error) {
	compiled, err := schedulespec.NormalizeCalendar(schedulespec.Calendar{Name: req.Name, Timezone: req.Timezone, Dates: req.Dates, Ranges: req.Ranges})
	if err != nil {
		var fe *schedulespec.FieldError
		if errors.As(err, &fe) {
			return store.NewCalendar{}, BadRequest(fe.Field, "%s", fe.Detail)
		}
		return store.NewCalendar{}, err
	}
	ranges, err := json.Marshal(compiled.Ranges)
	if err != nil {
		return store.NewCalendar{}, err
	}
	return store.NewCalendar{Name: compiled.Name, Timezone: compiled.Timezone, Dates: compiled.Dates, Ranges: ranges}, nil
}

func (s *Server) createCalendar(c echo.Context) error {
	var req CalendarRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	if req.Version != 0 {
		return BadRequest("version", "a new calendar has no version to match")
	}
	cal, err := req.validate()
	if err != nil {
		return err
	}
	row, err := s.Store.CreateCalendar(c.Request().Context(), cal)
	if errors.Is(err, store.ErrConflict) {
		return Conflict("name", "a calendar named %q already exists", req.Name)
	}
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(row.Version))
	return c.JSON(http.StatusCreated, calendarView(row))
}

func (s *Server) listCalendars(c echo.Context) error {
	return listPage(c, nameCursor, func(ctx context.Context, after string, limit int) ([]store.Calendar, error) {
		return s.Store.ListCalendars(ctx, after, limit)
	}, calendarView, func(r store.Calendar) string { return r.Name })
}

func (s *Server) getCalendar(c echo.Context) error {
	name := c.Param("name")
	ctx := c.Request().Context()
	row, err := s.Store.GetCalendar(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return NotFound("no calendar named %q", name)
	}
	if err != nil {
		return err
	}
	users, n, err := s.Store.CalendarUsers(ctx, name, maxCalendarUsersShown)
	if err != nil {
		return err
	}
	v := calendarView(row)
	v.UsedBy, v.UsedByCount = users, &n
	if v.UsedBy == nil {
		v.UsedBy = []string{}
	}
	c.Response().Header().Set("ETag", etag(row.Version))
	return c.JSON(http.StatusOK, v)
}

// putCalendar replaces a calendar's time zone, dates and ranges. The edit takes effect at
// once for every schedule excluding it: store.EditCalendar judges their fires armed ahead
// again in its transaction (scheduleplan.RejudgeArmed), and their workflows, which decide
// their ticks at their time, read the calendar then.
func (s *Server) putCalendar(c echo.Context) error {
	name := c.Param("name")
	var req CalendarRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	if req.Name == "" {
		req.Name = name
	}
	if req.Name != name {
		return BadRequest("name", "%q disagrees with the calendar %q of the path: a calendar is not renamed", req.Name, name)
	}
	expected, err := expectedVersion(c, req.Version)
	if err != nil {
		return err
	}
	cal, err := req.validate()
	if err != nil {
		return err
	}
	// A calendar given as it is stored changes nothing: no new version, no fire judged again
	// (tickgate apply sends every calendar of its files each time).
	if cur, err := s.Store.GetCalendar(c.Request().Context(), name); err == nil && sameCalendar(cur, cal) {
		v := calendarView(cur)
		v.Rejudged = &CalendarRejudged{}
		c.Response().Header().Set("ETag", etag(cur.Version))
		return c.JSON(http.StatusOK, v)
	}
	row, done, err := s.Store.EditCalendar(c.Request().Context(), cal, expected)
	switch {
	case errors.Is(err, store.ErrStale):
		return NewProblem(http.StatusPreconditionFailed, "version", "the calendar changed since version %d; read it again and retry", expected)
	case errors.Is(err, store.ErrNotFound):
		return NotFound("no calendar named %q", name)
	case err != nil:
		return err
	}
	v := calendarView(row)
	v.Rejudged = &CalendarRejudged{Skipped: done.Skipped, Fired: done.Unskipped}
	c.Response().Header().Set("ETag", etag(row.Version))
	return c.JSON(http.StatusOK, v)
}

// sameCalendar reports whether a stored calendar is the one a PUT asks for.
func sameCalendar(cur store.Calendar, asked store.NewCalendar) bool {
	return cur.Timezone == asked.Timezone && slices.Equal(cur.Dates, asked.Dates) && jsonEqual(cur.Ranges, asked.Ranges)
}

// deleteCalendar deletes a calendar no schedule excludes; one in use is a 409 naming the
// schedules that exclude it (change their spec first).
func (s *Server) deleteCalendar(c echo.Context) error {
	name := c.Param("name")
	err := s.Store.DeleteCalendar(c.Request().Context(), name)
	var inUse *store.CalendarInUseError
	switch {
	case errors.As(err, &inUse):
		more := ""
		if int64(len(inUse.Schedules)) < inUse.Total {
			more = fmt.Sprintf(" and %d more", inUse.Total-int64(len(inUse.Schedules)))
		}
		return Conflict("name", "calendar %q is excluded by %d schedules: %s%s; remove it from their spec.exclude_calendars first",
			name, inUse.Total, strings.Join(inUse.Schedules, ", "), more)
	case errors.Is(err, store.ErrNotFound):
		return NotFound("no calendar named %q", name)
	case err != nil:
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// expectedVersion is the version a change expects: the body's, or an If-Match header's.
func expectedVersion(c echo.Context, body int64) (int64, error) {
	if body < 0 {
		return 0, BadRequest("version", "must be positive")
	}
	m := c.Request().Header.Get("If-Match")
	if m == "" || m == "*" {
		return body, nil
	}
	v, err := strconv.ParseInt(strings.Trim(strings.TrimPrefix(m, "W/"), `"`), 10, 64)
	if err != nil || v <= 0 {
		return 0, BadRequest("If-Match", "want the ETag, such as \"3\"")
	}
	if body != 0 && body != v {
		return 0, BadRequest("version", "disagrees with If-Match")
	}
	return v, nil
}

// unknownCalendars answers a store refusal of calendars that do not exist as a 400 naming
// field (nil for any other error).
func unknownCalendars(err error, field string) error {
	var unknown *store.UnknownCalendarsError
	if !errors.As(err, &unknown) {
		return nil
	}
	return BadRequest(field, "no calendar named %s: create it first (POST /api/v1/calendars)", strings.Join(quoteAll(unknown.Names), ", "))
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strconv.Quote(n)
	}
	return out
}

// calendarsOf reads the calendars a spec excludes, compiled (one that no longer exists
// excludes nothing).
func (s *Server) calendarsOf(ctx context.Context, spec *schedulespec.Compiled) (schedulespec.Calendars, error) {
	cals, _, err := s.calendarsNamed(ctx, spec.Spec.ExcludeCalendars)
	return cals, err
}

// calendarsNamed reads the calendars named, compiled, and the names that do not exist.
func (s *Server) calendarsNamed(ctx context.Context, names []string) (schedulespec.Calendars, []string, error) {
	if len(names) == 0 {
		return nil, nil, nil
	}
	rows, err := s.Store.CalendarsNamed(ctx, names)
	if err != nil {
		return nil, nil, err
	}
	all, err := compileCalendars(rows)
	if err != nil {
		return nil, nil, err
	}
	picked, missing := schedulespec.Pick(all, names)
	return picked, missing, nil
}
