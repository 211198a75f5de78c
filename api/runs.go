package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// GET /runs: every schedule's runs whose tick lies in a window, newest first — what each
// figure of the overview counts (?status=MISSED, ?late_over=1s), one click away.

// ScheduleRunView is a run with the name of its schedule.
type ScheduleRunView struct {
	Schedule string `json:"schedule"`
	RunView
}

func (s *Server) listRuns(c echo.Context) error {
	w, _, err := s.statsWindow(c)
	if err != nil {
		return err
	}
	f := store.WindowRunFilter{Since: w.Since, Until: w.Until}
	if f.RunFilter, err = runFilter(c); err != nil {
		return err
	}
	if v := c.QueryParam("dead_letter"); v != "" {
		dead, err := strconv.ParseBool(v)
		if err != nil {
			return BadRequest("dead_letter", "want true or false; got %q", v)
		}
		if dead {
			return s.listDeadLetter(c, f)
		}
	}
	if v := c.QueryParam("late_over"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return BadRequest("late_over", "want a positive duration such as \"1s\"; got %q", v)
		}
		f.LateOver = d
	}
	page, _, err := pageOf(c, idCursor, func(ctx context.Context, before int64, limit int) ([]store.ScheduleRunOf, error) {
		return s.Store.ListRunsInWindow(ctx, f, before, limit)
	}, scheduleRunView, func(r store.ScheduleRunOf) int64 { return r.ScheduleRun.ID })
	if err != nil {
		return err
	}
	if err := s.addRunDeliveries(c.Request().Context(), page.Items); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}

func scheduleRunView(r store.ScheduleRunOf) ScheduleRunView {
	return ScheduleRunView{Schedule: r.ScheduleName, RunView: runView(r.ScheduleRun)}
}

// listDeadLetter answers ?dead_letter=true: the FAILED runs of http and workflow actions
// (a run redriven since is RUNNING, or ended again), newest first. Its window is the
// whole history unless ?window= is given; ?status= may only say FAILED.
func (s *Server) listDeadLetter(c echo.Context, f store.WindowRunFilter) error {
	for _, st := range f.Statuses {
		if st != string(domain.RunFailed) {
			return BadRequest("status", "the dead letter holds FAILED runs only; got %q", st)
		}
	}
	if f.LateOver > 0 || c.QueryParam("late_over") != "" {
		return BadRequest("late_over", "does not apply to the dead letter")
	}
	dl := store.DeadLetterFilter{Until: f.Until, Triggers: f.Triggers}
	if c.QueryParam("window") != "" {
		dl.Since = f.Since
	}
	page, _, err := pageOf(c, idCursor, func(ctx context.Context, before int64, limit int) ([]store.ScheduleRunOf, error) {
		return s.Store.ListDeadLetter(ctx, dl, before, limit)
	}, scheduleRunView, func(r store.ScheduleRunOf) int64 { return r.ScheduleRun.ID })
	if err != nil {
		return err
	}
	if err := s.addRunDeliveries(c.Request().Context(), page.Items); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}
