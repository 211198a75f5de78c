package api

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/store"
)

// GET /stats/overview and GET /schedules/{name}/stats: counts and lateness quantiles of
// schedule runs computed in PostgreSQL over a window of ticks (store/stats.go), per bucket
// for charts and over the whole window. The console's charts read them; so can anything.

// Windows a statistic may cover, and the late threshold.
const (
	minStatsWindow     = time.Minute
	maxStatsWindow     = 7 * 24 * time.Hour
	defaultStatsWindow = time.Hour
	// LateAfter is how late a fire must be to count as late.
	LateAfter = time.Second
	// statsBuckets is about how many buckets a window is cut into.
	statsBuckets = 60
)

// bucketSteps are the bucket widths a window may get: the smallest that cuts it into at
// most statsBuckets.
var bucketSteps = []time.Duration{time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}

// Lateness sums up the lateness of the scheduled and catch-up fires of a bucket or window,
// in seconds; the quantiles are null when no fire was measured.
type Lateness struct {
	Samples    int64    `json:"samples"`
	P50Seconds *float64 `json:"p50_seconds"`
	P90Seconds *float64 `json:"p90_seconds"`
	P99Seconds *float64 `json:"p99_seconds"`
	MaxSeconds *float64 `json:"max_seconds"`
}

// RunCounts counts the runs whose tick lies in a bucket or window. Ticks counts every
// recorded tick: Fired (those that ran, Failed and Running among them), Missed, Skipped and
// Buffered (still waiting under the overlap policy); Late the scheduled and catch-up fires
// later than late_after.
type RunCounts struct {
	Ticks    int64    `json:"ticks"`
	Fired    int64    `json:"fired"`
	Late     int64    `json:"late"`
	Missed   int64    `json:"missed"`
	Skipped  int64    `json:"skipped"`
	Failed   int64    `json:"failed"`
	Running  int64    `json:"running"`
	Buffered int64    `json:"buffered"`
	Lateness Lateness `json:"lateness"`
}

// StatsBucket is one bucket of a window, starting at T.
type StatsBucket struct {
	T time.Time `json:"t"`
	RunCounts
}

// RunStatsView is the statistics of a window of ticks.
type RunStatsView struct {
	Window    string        `json:"window"`
	Bucket    string        `json:"bucket"`
	LateAfter string        `json:"late_after"`
	Since     time.Time     `json:"since"`
	Until     time.Time     `json:"until"`
	Totals    RunCounts     `json:"totals"`
	Series    []StatsBucket `json:"series"`
}

// ScheduleStatsView is GET /schedules/{name}/stats.
type ScheduleStatsView struct {
	Schedule string `json:"schedule"`
	RunStatsView
}

// ScheduleStates counts the schedules by state.
type ScheduleStates struct {
	Total     int64 `json:"total"`
	Active    int64 `json:"active"`
	Paused    int64 `json:"paused"`
	Completed int64 `json:"completed"`
}

// RolloutsInFlight counts the rollouts with a task still active and shows the newest.
type RolloutsInFlight struct {
	Count int64         `json:"count"`
	Items []RolloutView `json:"items"`
}

// OverviewView is GET /stats/overview: every schedule's runs over the window, the
// schedules by state, the rollouts in flight and the active device task.
type OverviewView struct {
	RunStatsView
	Schedules  ScheduleStates   `json:"schedules"`
	Rollouts   RolloutsInFlight `json:"rollouts"`
	DeviceTask *DeviceTaskView  `json:"device_task"`
}

// overviewRollouts is how many rollouts in flight the overview shows.
const overviewRollouts = 5

func (s *Server) registerStats(g *echo.Group) {
	g.GET("/stats/overview", s.overviewStats)
	g.GET("/schedules/:name/stats", s.scheduleStats)
	g.GET("/runs", s.listRuns)
}

// statsWindow reads ?window= (a Go duration, default 1h) and cuts it into buckets that
// start on bucket boundaries; until is now.
func (s *Server) statsWindow(c echo.Context) (store.RunWindow, time.Duration, error) {
	window := defaultStatsWindow
	if v := c.QueryParam("window"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < minStatsWindow || d > maxStatsWindow {
			return store.RunWindow{}, 0, BadRequest("window", "want a duration from %s to %s, such as \"1h\"; got %q", minStatsWindow, maxStatsWindow, v)
		}
		window = d
	}
	bucket := bucketSteps[len(bucketSteps)-1]
	for _, step := range bucketSteps {
		if window/step <= statsBuckets {
			bucket = step
			break
		}
	}
	until := s.Now().UTC()
	since := until.Add(-window).Truncate(bucket)
	return store.RunWindow{Since: since, Until: until, Bucket: bucket, Late: LateAfter}, window, nil
}

func (s *Server) runStats(ctx context.Context, w store.RunWindow, window time.Duration) (RunStatsView, error) {
	total, buckets, err := s.Store.RunStats(ctx, w)
	if err != nil {
		return RunStatsView{}, err
	}
	v := RunStatsView{
		Window: window.String(), Bucket: w.Bucket.String(), LateAfter: w.Late.String(),
		Since: w.Since, Until: w.Until, Totals: runCounts(total), Series: []StatsBucket{},
	}
	// Every bucket of the window, the empty ones as zeros, so a chart's time axis is whole.
	next := 0
	for t := w.Since; t.Before(w.Until); t = t.Add(w.Bucket) {
		b := StatsBucket{T: t, RunCounts: RunCounts{}}
		if next < len(buckets) && buckets[next].Bucket.Equal(t) {
			b.RunCounts = runCounts(buckets[next])
			next++
		}
		v.Series = append(v.Series, b)
	}
	return v, nil
}

func runCounts(b store.RunBucket) RunCounts {
	l := Lateness{Samples: b.LatenessSamples}
	if b.LatenessSamples > 0 {
		l.P50Seconds, l.P90Seconds, l.P99Seconds, l.MaxSeconds = &b.P50S, &b.P90S, &b.P99S, &b.MaxS
	}
	return RunCounts{Ticks: b.Ticks, Fired: b.Fired, Late: b.Late, Missed: b.Missed, Skipped: b.Skipped, Failed: b.Failed,
		Running: b.Running, Buffered: b.Buffered, Lateness: l}
}

func (s *Server) scheduleStats(c echo.Context) error {
	row, err := s.scheduleByName(c)
	if err != nil {
		return err
	}
	w, window, err := s.statsWindow(c)
	if err != nil {
		return err
	}
	w.ScheduleID = row.ID
	v, err := s.runStats(c.Request().Context(), w, window)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ScheduleStatsView{Schedule: row.Name, RunStatsView: v})
}

func (s *Server) overviewStats(c echo.Context) error {
	w, window, err := s.statsWindow(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	runs, err := s.runStats(ctx, w, window)
	if err != nil {
		return err
	}
	v := OverviewView{RunStatsView: runs, Rollouts: RolloutsInFlight{Items: []RolloutView{}}}
	total, paused, completed, err := s.Store.ScheduleStates(ctx)
	if err != nil {
		return err
	}
	v.Schedules = ScheduleStates{Total: total, Active: total - paused - completed, Paused: paused, Completed: completed}
	n, rollouts, err := s.Store.RolloutsInFlight(ctx, overviewRollouts)
	if err != nil {
		return err
	}
	v.Rollouts.Count = n
	for _, r := range rollouts {
		v.Rollouts.Items = append(v.Rollouts.Items, newRolloutView(r))
	}
	active, err := s.Store.ActiveDeviceTask(ctx)
	if err != nil {
		return err
	}
	if active != nil {
		counts, err := s.Store.DeviceTaskCounts(ctx, active.ID)
		if err != nil {
			return err
		}
		t := deviceTaskView(*active)
		t.Counts = &DeviceTaskCounts{Active: counts.Active, Succeeded: counts.Succeeded, Failed: counts.Failed, Canceled: counts.Canceled}
		v.DeviceTask = &t
	}
	return c.JSON(http.StatusOK, v)
}
