package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
)

// POST /schedules/preview: the create form's live check. It validates a schedule as
// POST /schedules would (a bad field is the same problem+json naming it) and answers what
// the schedule would do, changing nothing.

// PreviewView answers a preview: the spec as it would be stored (defaults filled), in
// words, and its next fire times.
type PreviewView struct {
	Spec     schedulespec.Spec `json:"spec"`
	Policies SchedulePolicies  `json:"policies"`
	// Action and Retry as they would be stored (an http action's defaults filled in).
	Action        ScheduleAction `json:"action"`
	Retry         *domain.Retry  `json:"retry,omitempty"`
	Description   string         `json:"description"`
	NextFireTimes []time.Time    `json:"next_fire_times"`
}

// previewFires is how many fire times a preview lists.
const previewFires = 10

func (s *Server) previewSchedule(c echo.Context) error {
	var req CreateScheduleRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	// The name is optional here (an edit form has one already; a create form may not yet).
	if req.Name == "" {
		req.Name = "preview"
	}
	now := s.Now().UTC()
	spec, pol, err := s.validateSchedule(&req, now)
	if err != nil {
		return err
	}
	// The fire times leave out the ticks the calendars exclude (recorded SKIPPED, not fired).
	cals, missing, err := s.calendarsNamed(c.Request().Context(), spec.Spec.ExcludeCalendars)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return unknownCalendars(&store.UnknownCalendarsError{Names: missing}, "spec.exclude_calendars")
	}
	action, _ := req.Action.SplitHeaders() // the values are write-only: names only, as stored
	return c.JSON(http.StatusOK, PreviewView{
		Spec: spec.Spec, Policies: pol, Action: action, Retry: req.Retry, Description: spec.Describe(), NextFireTimes: spec.NextNOutside(now, previewFires, cals),
	})
}
