package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store/dbgen"
)

// Calendars (docs/schedules.md "Calendars"): named days and ranges that schedules exclude.
// Which times a calendar excludes is internal/schedulespec's rule, and what an edit makes
// of the fires armed ahead internal/scheduleplan's; the store keeps the rows and runs every
// judgement in a transaction that holds the calendars it reads FOR SHARE, so that an edit
// (which updates the row) and a judgement of ticks against it never interleave: one waits
// for the other.

// Calendar is a calendars row; its Ranges are a JSON array of {start, end}.
type Calendar = dbgen.Calendar

// NewCalendar is a calendar to create or the new content of one.
type NewCalendar struct {
	Name     string
	Timezone string
	Dates    []string
	Ranges   json.RawMessage
}

// UnknownCalendarsError names calendars a schedule excludes that do not exist.
type UnknownCalendarsError struct{ Names []string }

func (e *UnknownCalendarsError) Error() string {
	return "no calendar named " + strings.Join(e.Names, ", ")
}

// CalendarInUseError refuses to delete a calendar schedules exclude: Schedules are some of
// them (in name order), Total how many.
type CalendarInUseError struct {
	Calendar  string
	Schedules []string
	Total     int64
}

func (e *CalendarInUseError) Error() string {
	return fmt.Sprintf("calendar %q is excluded by %d schedules (%s)", e.Calendar, e.Total, strings.Join(e.Schedules, ", "))
}

// Exclusion is what a transaction recording ticks reads to judge them against calendars.
type Exclusion struct {
	// Calendars are the names the schedule's spec excludes.
	Calendars []string
	// Judge compiles the calendars, as read FOR SHARE in the transaction, into the reason a
	// tick is recorded SKIPPED with ("" when none of them excludes it).
	Judge func(cals []Calendar) (func(tick time.Time) string, error)
}

// judge reads the exclusion's calendars FOR SHARE and compiles its judge (nil: none to apply).
func (e *Exclusion) judge(ctx context.Context, q *dbgen.Queries) (func(time.Time) string, error) {
	if e == nil || len(e.Calendars) == 0 || e.Judge == nil {
		return nil, nil
	}
	cals, err := q.LockCalendars(ctx, e.Calendars)
	if err != nil {
		return nil, fmt.Errorf("read calendars %v: %w", e.Calendars, mapErr(err))
	}
	return e.Judge(cals)
}

// CreateCalendar inserts a calendar; a taken name is ErrConflict.
func (s *Store) CreateCalendar(ctx context.Context, c NewCalendar) (Calendar, error) {
	row, err := s.Q.InsertCalendar(ctx, dbgen.InsertCalendarParams{Name: c.Name, Timezone: c.Timezone, Dates: orEmpty(c.Dates), Ranges: c.Ranges})
	if err != nil {
		return Calendar{}, fmt.Errorf("insert calendar %q: %w", c.Name, mapErr(err))
	}
	return row, nil
}

// GetCalendar reads a calendar by name.
func (s *Store) GetCalendar(ctx context.Context, name string) (Calendar, error) {
	row, err := s.Q.GetCalendar(ctx, name)
	if err != nil {
		return Calendar{}, fmt.Errorf("get calendar %q: %w", name, mapErr(err))
	}
	return row, nil
}

// ListCalendars pages through calendars by name.
func (s *Store) ListCalendars(ctx context.Context, afterName string, limit int) ([]Calendar, error) {
	rows, err := s.Q.ListCalendars(ctx, dbgen.ListCalendarsParams{AfterName: afterName, MaxRows: int4(limit)})
	if err != nil {
		return nil, fmt.Errorf("list calendars: %w", mapErr(err))
	}
	return rows, nil
}

// CalendarsNamed reads the calendars named (those that exist).
func (s *Store) CalendarsNamed(ctx context.Context, names []string) ([]Calendar, error) {
	var rows []Calendar
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		var err error
		rows, err = q.LockCalendars(ctx, orEmpty(names))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read calendars %v: %w", names, mapErr(err))
	}
	return rows, nil
}

// CalendarUsers lists up to max of the schedules excluding the calendar, by name, and how
// many there are.
func (s *Store) CalendarUsers(ctx context.Context, name string, max int) ([]string, int64, error) {
	names, err := s.Q.SchedulesNamingCalendar(ctx, dbgen.SchedulesNamingCalendarParams{Calendar: name, MaxRows: int4(max)})
	if err != nil {
		return nil, 0, fmt.Errorf("schedules excluding calendar %q: %w", name, mapErr(err))
	}
	n, err := s.Q.CountSchedulesNamingCalendar(ctx, name)
	if err != nil {
		return nil, 0, fmt.Errorf("count schedules excluding calendar %q: %w", name, mapErr(err))
	}
	return names, n, nil
}

// DeleteCalendar deletes a calendar no schedule excludes: ErrNotFound when there is none,
// a *CalendarInUseError naming the schedules that exclude it otherwise. The delete locks the
// row before it counts the schedules naming it, and a schedule being created or updated to
// name it reads it FOR SHARE: either the delete sees that schedule, or the schedule finds
// the calendar gone.
func (s *Store) DeleteCalendar(ctx context.Context, name string) error {
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		if _, err := q.DeleteCalendar(ctx, name); err != nil {
			return mapErr(err)
		}
		n, err := q.CountSchedulesNamingCalendar(ctx, name)
		if err != nil {
			return mapErr(err)
		}
		if n == 0 {
			return nil
		}
		users, err := q.SchedulesNamingCalendar(ctx, dbgen.SchedulesNamingCalendarParams{Calendar: name, MaxRows: 10})
		if err != nil {
			return mapErr(err)
		}
		return &CalendarInUseError{Calendar: name, Schedules: users, Total: n}
	})
	if err != nil {
		var inUse *CalendarInUseError
		if errors.As(err, &inUse) {
			return inUse
		}
		return fmt.Errorf("delete calendar %q: %w", name, err)
	}
	return nil
}

// requireCalendars checks, in q's transaction, that every calendar named exists, reading
// them FOR SHARE so that none is deleted before the transaction commits.
func requireCalendars(ctx context.Context, q *dbgen.Queries, names []string) error {
	if len(names) == 0 {
		return nil
	}
	rows, err := q.LockCalendars(ctx, names)
	if err != nil {
		return fmt.Errorf("read calendars %v: %w", names, mapErr(err))
	}
	have := make(map[string]bool, len(rows))
	for _, r := range rows {
		have[r.Name] = true
	}
	var missing []string
	for _, n := range names {
		if !have[n] && !slices.Contains(missing, n) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return &UnknownCalendarsError{Names: missing}
	}
	return nil
}

// CalendarEdit is what an edit did to the armed fires of the schedules excluding it.
type CalendarEdit struct {
	Skipped, Unskipped int
}

// EditCalendar replaces a calendar's time zone, dates and ranges — optimistically, when
// expectedVersion is not 0 (ErrStale) — and makes the change true for every schedule
// excluding it at once: in the same transaction, their armed fires not yet released are
// judged again under the calendars they exclude as they now stand
// (scheduleplan.RejudgeArmed): a fire the calendar now excludes is SKIPPED, a tick it no
// longer excludes fires. The transaction holds the release lock shared, so no release runs
// meanwhile: a fire is judged anew before its release, or was released before the edit (a
// fact the edit leaves alone). Calendars are locked in name order, the edited one by its
// update, the others FOR SHARE, as every judge reads them.
func (s *Store) EditCalendar(ctx context.Context, c NewCalendar, expectedVersion int64) (Calendar, CalendarEdit, error) {
	var row Calendar
	var done CalendarEdit
	err := s.retractingTx(ctx, func(q *dbgen.Queries) error {
		named, err := q.CalendarsNamedBeside(ctx, c.Name)
		if err != nil {
			return fmt.Errorf("calendars named beside %q: %w", c.Name, mapErr(err))
		}
		var before, after []string
		for _, n := range named {
			if n < c.Name {
				before = append(before, n)
			} else if n > c.Name {
				after = append(after, n)
			}
		}
		cals, err := q.LockCalendars(ctx, orEmpty(before))
		if err != nil {
			return fmt.Errorf("read calendars: %w", mapErr(err))
		}
		row, err = q.UpdateCalendar(ctx, dbgen.UpdateCalendarParams{
			Name: c.Name, Timezone: c.Timezone, Dates: orEmpty(c.Dates), Ranges: c.Ranges, ExpectedVersion: expectedVersion,
		})
		if err != nil {
			return mapErr(err)
		}
		rest, err := q.LockCalendars(ctx, orEmpty(after))
		if err != nil {
			return fmt.Errorf("read calendars: %w", mapErr(err))
		}
		cals = append(append(cals, row), rest...)
		armed, err := q.ArmedRunsNamingCalendar(ctx, c.Name)
		if err != nil {
			return fmt.Errorf("armed fires excluding calendar %q: %w", c.Name, mapErr(err))
		}
		if len(armed) == 0 {
			return nil
		}
		verdicts, err := scheduleplan.RejudgeArmed(storedCalendars(cals), armedFires(armed))
		if err != nil {
			return err
		}
		var skip dbgen.SkipArmedRunsParams
		var fire dbgen.UnskipArmedRunsParams
		for _, v := range verdicts {
			if v.SkipReason != "" {
				skip.Ids = append(skip.Ids, v.RunID)
				skip.Reasons = append(skip.Reasons, v.SkipReason)
				continue
			}
			data := string(v.Event.Data)
			if data == "" {
				data = "{}"
			}
			fire.Ids = append(fire.Ids, v.RunID)
			fire.Topics = append(fire.Topics, v.Event.Topic)
			fire.Types = append(fire.Types, v.Event.Type)
			fire.AggregateIds = append(fire.AggregateIds, v.Schedule)
			fire.Data = append(fire.Data, data)
		}
		if len(skip.Ids) > 0 {
			if err := q.SkipArmedRuns(ctx, skip); err != nil {
				return fmt.Errorf("skip %d armed fires: %w", len(skip.Ids), mapErr(err))
			}
		}
		if len(fire.Ids) > 0 {
			if err := q.UnskipArmedRuns(ctx, fire); err != nil {
				return fmt.Errorf("fire %d armed ticks: %w", len(fire.Ids), mapErr(err))
			}
		}
		done = CalendarEdit{Skipped: len(skip.Ids), Unskipped: len(fire.Ids)}
		return nil
	})
	if err == nil {
		return row, done, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return Calendar{}, CalendarEdit{}, fmt.Errorf("edit calendar %q: %w", c.Name, err)
	}
	if _, getErr := s.GetCalendar(ctx, c.Name); getErr != nil {
		return Calendar{}, CalendarEdit{}, getErr
	}
	return Calendar{}, CalendarEdit{}, fmt.Errorf("edit calendar %q: version %d expected: %w", c.Name, expectedVersion, ErrStale)
}

// storedCalendars are calendars rows as the rules read them.
func storedCalendars(rows []Calendar) []schedulespec.StoredCalendar {
	out := make([]schedulespec.StoredCalendar, len(rows))
	for i, r := range rows {
		out[i] = schedulespec.StoredCalendar{Name: r.Name, Timezone: r.Timezone, Dates: r.Dates, Ranges: r.Ranges}
	}
	return out
}

// armedFires are a calendar edit's armed fires as its judgement reads them.
func armedFires(rows []dbgen.ArmedRunsNamingCalendarRow) []scheduleplan.ArmedFire {
	out := make([]scheduleplan.ArmedFire, len(rows))
	for i, r := range rows {
		out[i] = scheduleplan.ArmedFire{RunID: r.ID, Schedule: r.ScheduleName, Spec: r.Spec, Action: r.Action,
			Tick: r.ScheduledAt, VisibleAt: r.VisibleAt, Status: r.Status, Reason: r.Reason}
	}
	return out
}
