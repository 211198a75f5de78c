package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/store"
)

// MaxBulkSchedules is the most schedules one bulk create takes.
const MaxBulkSchedules = 1000

// BulkCreateRequest is the body of POST /schedules/bulk.
type BulkCreateRequest struct {
	Items []CreateScheduleRequest `json:"items"`
}

// BulkCreatedItem says what became of one schedule of a bulk create.
type BulkCreatedItem struct {
	Name string `json:"name"`
	// Status: "created", or "exists" when a schedule of that name and the same definition
	// was there already (a retried request creates nothing twice).
	Status   string       `json:"status"`
	Schedule ScheduleView `json:"schedule"`
	// SigningSecret is a created http schedule's signing secret, shown this once (a
	// schedule that "exists" keeps its own, not shown again; a replay of the request says
	// so in SigningSecretNote).
	SigningSecret     string `json:"signing_secret,omitempty"`
	SigningSecretNote string `json:"signing_secret_note,omitempty"`
}

// BulkCreateView answers a bulk create, in the order of the request's items.
type BulkCreateView struct {
	Items []BulkCreatedItem `json:"items"`
}

// bulkCreateSchedules creates up to MaxBulkSchedules schedules in one transaction. Every
// item is judged as POST /schedules judges one, and the request changes nothing unless all
// pass: a bad item is a 400 naming items[i].<field>. It is idempotent per name: a name held
// by a schedule of the same definition is answered "exists"; one held by another definition
// is a 409, and nothing is created.
func (s *Server) bulkCreateSchedules(c echo.Context) error {
	var req BulkCreateRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	now := s.Now().UTC()
	rows, index, err := req.validate(now, s.HTTPAllow)
	if err != nil {
		return err
	}
	// This server's rules too, as POST /schedules applies them: a workflow action's target,
	// and an http action's header values given at create.
	for i := range req.Items {
		err := s.checkWorkflowTarget(req.Items[i].Action)
		if err == nil {
			_, err = headerValues(req.Items[i].Action, nil)
		}
		if err != nil {
			return prefixProblem(fmt.Sprintf("items[%d]", i), err)
		}
	}
	// In resident mode a new schedule's workflow is opened by the planner's first look.
	for i := range rows {
		s.openIfResident(&rows[i], now)
	}
	calendars, namedBy := calendarsNamed(req.Items)
	res, err := s.Store.CreateSchedules(c.Request().Context(), rows, func(existing store.Schedule) error {
		i := index[existing.Name]
		if !sameDefinition(existing, rows[i], req.Items[i].Spec.StartAt != nil) {
			return Conflict(fmt.Sprintf("items[%d].name", i), "a schedule named %q exists with another definition", existing.Name)
		}
		return nil
	}, store.ExcludingCalendars(calendars...), store.CreatedBy(PrincipalOf(c).Name()))
	if err != nil {
		var unknown *store.UnknownCalendarsError
		if errors.As(err, &unknown) {
			return unknownCalendars(err, fmt.Sprintf("items[%d].spec.exclude_calendars", namedBy[unknown.Names[0]]))
		}
		var p *Problem
		if errors.As(err, &p) {
			return p
		}
		return err
	}
	out := BulkCreateView{Items: make([]BulkCreatedItem, len(rows))}
	for _, row := range res.Created {
		i := index[row.Name]
		out.Items[i] = BulkCreatedItem{Name: row.Name, Status: "created", Schedule: scheduleView(row), SigningSecret: rows[i].SigningSecret}
	}
	for name, row := range res.Existing {
		out.Items[index[name]] = BulkCreatedItem{Name: name, Status: "exists", Schedule: scheduleView(row)}
	}
	status := http.StatusOK
	if len(res.Created) > 0 {
		status = http.StatusCreated
	}
	replay := BulkCreateView{Items: make([]BulkCreatedItem, len(out.Items))}
	shows := false
	for i, item := range out.Items {
		replay.Items[i] = item
		if item.SigningSecret != "" {
			shows = true
			replay.Items[i].SigningSecret, replay.Items[i].SigningSecretNote = "", secretShownOnce
		}
	}
	if shows {
		showsSecret(c, replay)
	}
	return c.JSON(status, out)
}

// validate judges every item as POST /schedules judges one (a bad item is a 400 naming
// items[i].<field>) and returns the rows to create, and each name's item.
func (req *BulkCreateRequest) validate(now time.Time, rule outbound.Rule) ([]store.NewSchedule, map[string]int, error) {
	switch {
	case len(req.Items) == 0:
		return nil, nil, BadRequest("items", "is required: at least one schedule")
	case len(req.Items) > MaxBulkSchedules:
		return nil, nil, BadRequest("items", "at most %d schedules per request; got %d", MaxBulkSchedules, len(req.Items))
	}
	rows := make([]store.NewSchedule, len(req.Items))
	index := make(map[string]int, len(req.Items))
	for i := range req.Items {
		item := &req.Items[i]
		field := fmt.Sprintf("items[%d]", i)
		if item.Metrics {
			return nil, nil, BadRequest(field+".metrics", "a bulk create does not take series of a schedule's own: set them with PATCH")
		}
		spec, pol, err := item.validate(now, rule)
		if err != nil {
			return nil, nil, prefixProblem(field, err)
		}
		if j, dup := index[item.Name]; dup {
			return nil, nil, BadRequest(field+".name", "%q is also items[%d]'s name", item.Name, j)
		}
		index[item.Name] = i
		rows[i] = NewScheduleRow(*item, spec, pol, now)
	}
	return rows, index, nil
}

// sameDefinition reports whether an existing schedule is the one a create asks for: the
// same spec, action, policies, retry policy and labels. (Its runtime state — paused, next fire — is its own.) A
// create that gave no start_at took the time of its request: its retry, a moment later,
// asks for the same schedule, so start_at is compared only when it was given.
func sameDefinition(existing store.Schedule, asked store.NewSchedule, startGiven bool) bool {
	spec, askedSpec := existing.Spec, asked.Spec
	if !startGiven {
		spec, askedSpec = withoutKey(spec, "start_at"), withoutKey(askedSpec, "start_at")
	}
	return jsonEqual(spec, askedSpec) && jsonEqual(existing.Action, asked.Action) &&
		existing.Overlap == asked.Overlap && existing.CatchupWindowMs == asked.CatchupWindowMs &&
		existing.SkipIfSuccessful == asked.SkipIfSuccessful && jsonEqual(existing.Retry, asked.Retry) &&
		existing.AfterCompletion == asked.AfterCompletion &&
		equalPtr(existing.MaxConcurrent, asked.MaxConcurrent) && equalPtr(existing.OverlapWhenFull, asked.OverlapWhenFull) &&
		jsonEqual(existing.Labels, asked.Labels)
}

// equalPtr reports whether two optional values are both absent or equal.
func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// calendarsNamed are the calendars the items' specs exclude, and the first item naming each.
func calendarsNamed(items []CreateScheduleRequest) ([]string, map[string]int) {
	var names []string
	first := map[string]int{}
	for i, it := range items {
		for _, n := range it.Spec.ExcludeCalendars {
			if _, seen := first[n]; !seen {
				first[n] = i
				names = append(names, n)
			}
		}
	}
	return names, first
}

// withoutKey is a JSON object without one of its keys (the document itself if it is none).
func withoutKey(doc json.RawMessage, key string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(doc, &m) != nil {
		return doc
	}
	delete(m, key)
	out, err := json.Marshal(m)
	if err != nil {
		return doc
	}
	return out
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	ax, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return bytes.Equal(ax, by)
}

// prefixProblem names a problem's field under an item of a list.
func prefixProblem(prefix string, err error) error {
	var p *Problem
	if !errors.As(err, &p) {
		return err
	}
	cp := *p
	if cp.Field == "" {
		cp.Field = prefix
	} else {
		cp.Field = prefix + "." + cp.Field
	}
	return &cp
}
