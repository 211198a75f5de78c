package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// Labels, selectors, bulk pause and resume, and a schedule's history (docs/schedules.md
// "Labels and selectors", "Pausing many schedules", "History").

// Limits of a bulk pause or resume.
const (
	// MaxSelected is the most schedules one bulk pause or resume reaches; a selector that
	// matches more is refused before anything changes.
	MaxSelected = 1000
	// bulkParallel is how many schedules' commands a bulk pause or resume has in flight: each
	// waits for its schedule's workflow to take the update.
	bulkParallel = 16
)

// selectorParam reads ?selector= (absent or empty: every schedule).
func selectorParam(c echo.Context) (domain.Selector, error) {
	sel, err := domain.ParseSelector(c.QueryParam("selector"))
	if err != nil {
		return nil, fieldProblem("selector", err)
	}
	return sel, nil
}

// BulkStateRequest is the body of POST /schedules/pause and /schedules/resume.
type BulkStateRequest struct {
	Selector string `json:"selector"`
	Note     string `json:"note,omitempty"`
}

// BulkStateItem is one schedule a bulk pause or resume reached: whether this call changed
// it (Outcome paused or resumed) or it was in that state already (already_paused,
// already_active).
type BulkStateItem struct {
	Name    string `json:"name"`
	Outcome string `json:"outcome"`
	Changed bool   `json:"changed"`
}

// BulkStateView answers a bulk pause or resume: every schedule the selector reached, in name
// order, and how many this call changed.
type BulkStateView struct {
	Selector  string          `json:"selector"`
	Items     []BulkStateItem `json:"items"`
	Changed   int             `json:"changed"`
	Unchanged int             `json:"unchanged"`
}

func (s *Server) pauseSelected(c echo.Context) error { return s.setSelectedPaused(c, true) }

func (s *Server) resumeSelected(c echo.Context) error { return s.setSelectedPaused(c, false) }

// validate reads a bulk pause's (or resume's) selector and judges its note by the rules of
// the command it sends each schedule, who being the caller's name.
func (req BulkStateRequest) validate(pause bool, who string) (domain.Selector, error) {
	if strings.TrimSpace(req.Selector) == "" {
		return domain.Selector{}, BadRequest("selector", "is required, such as team=billing: an empty selector would reach every schedule")
	}
	sel, err := domain.ParseSelector(req.Selector)
	if err != nil {
		return domain.Selector{}, fieldProblem("selector", err)
	}
	refusal := workflows.CheckResume(workflows.ResumeRequest{Note: req.Note, Identity: who})
	if pause {
		refusal = workflows.CheckPause(workflows.PauseRequest{Note: req.Note, Identity: who})
	}
	if refusal != nil {
		return domain.Selector{}, refusalProblem(refusal)
	}
	return sel, nil
}

// setSelectedPaused pauses (or resumes) every schedule the selector reaches, each through
// the same command as POST /schedules/{name}/pause (or resume) — its workflow's update,
// judged by the same rules, recorded in its history with the token's name and the note — at
// most bulkParallel at a time. A selector is required (an empty one would reach every
// schedule) and may reach at most MaxSelected schedules; either refusal changes nothing. It
// is safe to retry: a schedule in the asked state already is left as it is and answered
// unchanged, and with the same Idempotency-Key the first answer is answered again. When some
// schedule's command fails (its workflow did not answer), the answer is a 503 naming them;
// the others were done, and a retry does what is left.
func (s *Server) setSelectedPaused(c echo.Context, pause bool) error {
	var req BulkStateRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	who := PrincipalOf(c).Name()
	sel, err := req.validate(pause, who)
	if err != nil {
		return err
	}
	command := workflows.ScheduleResume
	if pause {
		command = workflows.SchedulePause
	}
	ctx := c.Request().Context()
	reached, err := s.Store.SchedulesBySelector(ctx, sel, MaxSelected+1)
	if err != nil {
		return err
	}
	if len(reached) > MaxSelected {
		return BadRequest("selector", "%q matches more than %d schedules: narrow it (a bulk %s reaches at most %d)", sel.String(), MaxSelected, command, MaxSelected)
	}
	items := make([]BulkStateItem, len(reached))
	failures := make([]error, len(reached))
	gone := make([]bool, len(reached))
	var wg sync.WaitGroup
	slots := make(chan struct{}, bulkParallel)
	for i, r := range reached {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			var d workflows.ScheduleDescription
			var err error
			if pause {
				d, err = s.Starter.PauseSchedule(ctx, r.ID, r.Name, workflows.PauseRequest{Note: req.Note, Identity: who})
			} else {
				d, err = s.Starter.ResumeSchedule(ctx, r.ID, r.Name, workflows.ResumeRequest{Note: req.Note, Identity: who})
			}
			if err != nil {
				// A schedule deleted meanwhile is no longer one the selector reaches.
				if _, getErr := s.Store.GetScheduleByID(context.WithoutCancel(ctx), r.ID); errors.Is(getErr, store.ErrNotFound) {
					gone[i] = true
					return
				}
				failures[i] = s.scheduleCommandError(r.Name, err)
				return
			}
			items[i] = BulkStateItem{Name: r.Name, Outcome: stateOutcome(pause, d.Changed), Changed: d.Changed}
		}()
	}
	wg.Wait()
	out := BulkStateView{Selector: sel.String(), Items: []BulkStateItem{}}
	var failed []string
	for i, r := range reached {
		switch {
		case gone[i]:
		case failures[i] != nil:
			failed = append(failed, fmt.Sprintf("%s (%v)", r.Name, failures[i]))
		default:
			out.Items = append(out.Items, items[i])
			if items[i].Changed {
				out.Changed++
			} else {
				out.Unchanged++
			}
		}
	}
	if len(failed) > 0 {
		c.Response().Header().Set("Retry-After", "1")
		return NewProblem(http.StatusServiceUnavailable, "", "%d of %d schedules were not %s: %s; the others were (%d changed). Retry: what is done already is left as it is",
			len(failed), len(reached), pastTense(pause), strings.Join(firstN(failed, 10), "; "), out.Changed)
	}
	return c.JSON(http.StatusOK, out)
}

func stateOutcome(pause, changed bool) string {
	switch {
	case pause && changed:
		return "paused"
	case pause:
		return "already_paused"
	case changed:
		return "resumed"
	}
	return "already_active"
}

func pastTense(pause bool) string {
	if pause {
		return "paused"
	}
	return "resumed"
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
}

// HistoryEntryView is an entry of a schedule's history.
type HistoryEntryView struct {
	ID      int64               `json:"id"`
	At      time.Time           `json:"at"`
	Kind    domain.HistoryKind  `json:"kind"`
	By      string              `json:"by"`
	Door    domain.Door         `json:"door"`
	Note    string              `json:"note"`
	Changes []store.FieldChange `json:"changes"`
}

func historyView(h store.ScheduleHistoryEntry) HistoryEntryView {
	v := HistoryEntryView{ID: h.ID, At: h.At.UTC(), Kind: domain.HistoryKind(h.Kind), By: h.Actor, Door: domain.Door(h.Door), Note: h.Note,
		Changes: []store.FieldChange{}}
	_ = json.Unmarshal(h.Changes, &v.Changes)
	return v
}

// scheduleHistory pages through a schedule's history, newest first: who paused, resumed or
// edited it, when and why.
func (s *Server) scheduleHistory(c echo.Context) error {
	row, err := s.scheduleByName(c)
	if err != nil {
		return err
	}
	return listPage(c, idCursor, func(ctx context.Context, before int64, limit int) ([]store.ScheduleHistoryEntry, error) {
		return s.Store.ScheduleHistory(ctx, row.ID, before, limit)
	}, historyView, func(h store.ScheduleHistoryEntry) int64 { return h.ID })
}

// headerValueChanges tells, by name only, which of an http action's header values an update
// changed (set anew, or given a new value): the history never holds a value.
func headerValueChanges(before, after map[string]string) []store.FieldChange {
	var changed []string
	for name, v := range after {
		if old, ok := before[name]; !ok || old != v {
			changed = append(changed, name)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	slices.Sort(changed)
	to, _ := json.Marshal(changed)
	return []store.FieldChange{{Field: "action.header_values", From: json.RawMessage(`null`), To: to}}
}

// definitionChanges lists what an update changes of a schedule as cur shows it: each field
// whose value differs, with its value before and after (nil: nothing).
func definitionChanges(cur ScheduleView, spec schedulespec.Spec, action ScheduleAction, pol SchedulePolicies, labels domain.Labels) []store.FieldChange {
	if labels == nil {
		labels = domain.Labels{}
	}
	fields := []struct {
		name     string
		from, to any
	}{
		{"spec", cur.Spec, spec},
		{"action", cur.Action, action},
		{"policies.overlap", cur.Policies.Overlap, pol.Overlap},
		{"policies.catchup_window", cur.Policies.CatchupWindow, pol.CatchupWindow},
		{"policies.skip_if_successful", cur.Policies.SkipIfSuccessful, pol.SkipIfSuccessful},
		{"policies.max_concurrent", cur.Policies.MaxConcurrent, pol.MaxConcurrent},
		{"policies.overlap_when_full", cur.Policies.OverlapWhenFull, pol.OverlapWhenFull},
		{"labels", cur.Labels, labels},
	}
	var out []store.FieldChange
	for _, f := range fields {
		from, _ := json.Marshal(f.from)
		to, _ := json.Marshal(f.to)
		if !jsonEqual(from, to) {
			out = append(out, store.FieldChange{Field: f.name, From: from, To: to})
		}
	}
	return out
}
