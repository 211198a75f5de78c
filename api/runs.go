package api

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"

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
	if v := c.QueryParam("late_over"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return BadRequest("late_over", "want a positive duration such as \"1s\"; got %q", v)
		}
		f.LateOver = d
	}
	return listPage(c, idCursor, func(ctx context.Context, before int64, limit int) ([]store.ScheduleRunOf, error) {
		return s.Store.ListRunsInWindow(ctx, f, before, limit)
	}, func(r store.ScheduleRunOf) ScheduleRunView {
		return ScheduleRunView{Schedule: r.ScheduleName, RunView: runView(r.ScheduleRun)}
	}, func(r store.ScheduleRunOf) int64 { return r.ScheduleRun.ID })
}
