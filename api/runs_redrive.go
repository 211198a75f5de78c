package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// Bulk redrive (docs/schedules.md "Dead letter and redrive"): every dead-lettered run of a
// range of ticks, of the schedules a selector reaches, delivered again — at most limit runs a
// request, the answer saying how far it got and handing a continuation for the rest.

// Bounds of a bulk redrive's pages.
const (
	DefaultRedriveLimit = 100
	MaxRedriveLimit     = 1000
)

// BulkRedriveRequest begins a bulk redrive (selector, since, until) or goes on with one
// (continue, the token a previous answer handed out).
type BulkRedriveRequest struct {
	Selector string     `json:"selector,omitempty"`
	Since    *time.Time `json:"since,omitempty"`
	Until    *time.Time `json:"until,omitempty"`
	// Limit is the most runs this request redrives (default 100, at most 1,000).
	Limit    int    `json:"limit,omitempty"`
	Continue string `json:"continue,omitempty"`
}

// BulkRedriveView is how far a bulk redrive got: its counts over every request so far, what
// remains, and this request's runs.
type BulkRedriveView struct {
	Job      int64     `json:"job"`
	Selector string    `json:"selector"`
	Since    time.Time `json:"since"`
	Until    time.Time `json:"until"`
	// Matched is how many dead-lettered runs the range held when the redrive began (runs
	// failing later are not its).
	Matched   int  `json:"matched"`
	Redriven  int  `json:"redriven"`
	Skipped   int  `json:"skipped"`
	Remaining int  `json:"remaining"`
	Done      bool `json:"done"`
	// Continue goes on with the rest (empty when done): POST it back as continue.
	Continue string                `json:"continue"`
	Items    []BulkRedriveItemView `json:"items"`
}

// BulkRedriveItemView is what this request did with one run.
type BulkRedriveItemView struct {
	RunID      int64  `json:"run_id"`
	Schedule   string `json:"schedule,omitempty"`
	Outcome    string `json:"outcome"` // redriven or skipped
	WorkflowID string `json:"workflow_id,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// judgedRedrive is a BulkRedriveRequest once judged: the page's size and either the redrive to go
// on with (Continue) or the range of a new one.
type judgedRedrive struct {
	Limit    int
	Continue int64 // 0: a new redrive over Range
	Range    store.RedriveRange
}

// validate judges the request alone (the store judges whether a continuation exists): a
// problem naming the field, or the judged redrive.
func (req BulkRedriveRequest) validate() (judgedRedrive, error) {
	judged := judgedRedrive{Limit: req.Limit}
	switch {
	case judged.Limit == 0:
		judged.Limit = DefaultRedriveLimit
	case judged.Limit < 0 || judged.Limit > MaxRedriveLimit:
		return judged, BadRequest("limit", "want 1 to %d runs a request, got %d", MaxRedriveLimit, judged.Limit)
	}
	if req.Continue != "" {
		if req.Selector != "" || req.Since != nil || req.Until != nil {
			return judged, BadRequest("continue", "goes on with the redrive it names, its selector and range: give it alone (with limit)")
		}
		id, err := strconv.ParseInt(req.Continue, 10, 64)
		if err != nil || id <= 0 {
			return judged, BadRequest("continue", "not a continuation this API handed out: %q", req.Continue)
		}
		judged.Continue = id
		return judged, nil
	}
	sel, err := domain.ParseSelector(req.Selector)
	if err != nil {
		return judged, fieldProblem("selector", err)
	}
	switch {
	case req.Since == nil:
		return judged, BadRequest("since", "is required (RFC 3339): the first tick of the range")
	case req.Until == nil:
		return judged, BadRequest("until", "is required (RFC 3339): the end of the range, not included")
	case !req.Until.After(*req.Since):
		return judged, BadRequest("until", "must be after since")
	}
	judged.Range = store.RedriveRange{Selector: sel, Since: *req.Since, Until: *req.Until}
	return judged, nil
}

// redriveRuns redrives the next page of a bulk redrive: a new one (selector, since, until),
// or the one continue names. Each page is one transaction: a run it redrives is RUNNING again
// when the answer comes (a run watcher starts its series within a second), and no run is
// redriven twice by one bulk redrive however its requests are retried.
func (s *Server) redriveRuns(c echo.Context) error {
	var req BulkRedriveRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	judged, err := req.validate()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	jobID := judged.Continue
	if jobID == 0 {
		judged.Range.RequestedBy = actor(c).Label
		job, err := s.Store.StartRedriveJob(ctx, judged.Range)
		if err != nil {
			return err
		}
		jobID = job.ID
	}
	limit := judged.Limit
	page, err := s.Store.RedriveJobPage(ctx, jobID, limit)
	if errors.Is(err, store.ErrNotFound) {
		return BadRequest("continue", "no bulk redrive %d", jobID)
	}
	if err != nil {
		return err
	}
	v := BulkRedriveView{
		Job: page.Job.ID, Selector: page.Job.Selector, Since: page.Job.Since.UTC(), Until: page.Job.Until.UTC(),
		Matched: int(page.Job.Matched), Redriven: int(page.Job.Redriven), Skipped: int(page.Job.Skipped),
		Remaining: page.Remaining, Done: page.Remaining == 0, Items: []BulkRedriveItemView{},
	}
	if !v.Done {
		v.Continue = strconv.FormatInt(page.Job.ID, 10)
	}
	for _, r := range page.Runs {
		item := BulkRedriveItemView{RunID: r.RunID, Schedule: r.Schedule, WorkflowID: r.WorkflowID, Outcome: "redriven"}
		if !r.Redriven {
			item.Outcome, item.Reason = "skipped", r.Reason
		}
		v.Items = append(v.Items, item)
	}
	return c.JSON(http.StatusAccepted, v)
}
