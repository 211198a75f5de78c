package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tickgate/tickgate/client"
)

// `tickgate apply`: schedules as code (docs/gitops.md). The files say what a set of
// schedules is; apply makes the server say the same, through PUT /schedules/{name} (which
// writes nothing for a schedule already as the files say), and owns what it made with the
// label tickgate.dev/set: NAME.

// Plan actions.
const (
	actCreate    = "create"
	actUpdate    = "update"
	actUnchanged = "unchanged"
	actDelete    = "delete"
	actConflict  = "conflict"
	actError     = "error"
)

// applyOptions are apply's flags.
type applyOptions struct {
	files       []string
	set         string
	dryRun      bool
	prune       bool
	adopt       bool
	concurrency int
}

// planItem is what apply did (or, on a dry run, would do) with one document or one pruned
// schedule.
type planItem struct {
	Action  string        `json:"action"`
	Kind    string        `json:"kind"`
	Name    string        `json:"name"`
	Changes []fieldChange `json:"changes,omitempty"`
	// Owner is, for a conflict, the set that owns the name ("" when none does).
	Owner   string `json:"owner,omitempty"`
	Error   string `json:"error,omitempty"`
	Version int64  `json:"version,omitempty"`
	Source  string `json:"source,omitempty"`
	// SigningSecret is the secret of an http schedule apply created, shown this once.
	SigningSecret string `json:"signing_secret,omitempty"`
	err           error
}

type fieldChange struct {
	Field string          `json:"field"`
	From  json.RawMessage `json:"from"`
	To    json.RawMessage `json:"to"`
}

// applyReport is apply's answer.
type applyReport struct {
	Set     string         `json:"set"`
	DryRun  bool           `json:"dry_run"`
	Items   []planItem     `json:"items"`
	Summary map[string]int `json:"summary"`
}

func applyCmd(a *app) *cobra.Command {
	o := applyOptions{}
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR --set NAME [--dry-run] [--prune] [--adopt]",
		Short: "Make the server's schedules and calendars what the files say (schedules as code)",
		Long: `apply reads Schedule and Calendar documents (YAML or JSON, several to a file; a document is
the create body plus its kind) and makes the server hold them: each schedule is created,
updated or left as it is, and labelled tickgate.dev/set: NAME. A schedule already as the
files say is not written at all (no new version, no history entry, no armed fire touched).

--dry-run prints the plan (create, update field by field, unchanged, delete, conflict) and
changes nothing. --prune deletes the schedules of the set that the files no longer hold,
and only those. A name held by a schedule of another set, or of none, is a conflict: it is
reported and left alone (exit 4) — unless --adopt, which takes over a schedule that no set
owns. Calendars are created or replaced, never pruned. See docs/gitops.md.`,
		Example: `  tickgate apply -f schedules/ --set billing --dry-run
  tickgate apply -f schedules/ --set billing --prune
  tickgate export --selector team=billing > schedules/billing.yaml`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(o.files) == 0 {
				return usagef("apply: give the files with -f FILE|DIR")
			}
			if o.set == "" {
				return usagef("apply: give the set the files make with --set NAME")
			}
			if o.concurrency < 1 || o.concurrency > 64 {
				return usagef("apply: --concurrency must be 1 to 64, got %d", o.concurrency)
			}
			manifests, err := readManifests(o.files, a.env.Stdin)
			if err != nil {
				return err
			}
			rep, err := a.apply(manifests, o)
			if err != nil {
				return err
			}
			if err := a.printReport(rep); err != nil {
				return err
			}
			return rep.outcome()
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "file", "f", nil, "a manifest file, or a directory of them (*.yaml, *.yml, *.json); repeatable; - for stdin")
	f.StringVar(&o.set, "set", "", "the set the files make: what apply creates carries the label tickgate.dev/set=NAME")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the plan and change nothing")
	f.BoolVar(&o.prune, "prune", false, "delete the set's schedules the files no longer hold")
	f.BoolVar(&o.adopt, "adopt", false, "take over a schedule of a file's name that no set owns (else a conflict)")
	f.IntVar(&o.concurrency, "concurrency", 8, "requests in flight at once")
	return cmd
}

// apply plans (and unless dry-run, applies) the manifests for the set.
func (a *app) apply(manifests []manifest, o applyOptions) (*applyReport, error) {
	rep := &applyReport{Set: o.set, DryRun: o.dryRun, Items: []planItem{}}
	var calendars, schedules []manifest
	for _, m := range manifests {
		if m.Kind == KindCalendar {
			calendars = append(calendars, m)
		} else {
			schedules = append(schedules, m)
		}
	}
	// The set's schedules as the server holds them: what apply may update and prune.
	owned := map[string]int64{}
	sel := SetLabel + "=" + o.set
	limit := 500
	for s, err := range a.api.Schedules(a.ctx, &client.ListSchedulesParams{Selector: &sel, Limit: &limit}) {
		if err != nil {
			return nil, err
		}
		owned[*s.Name] = int64(*s.Version)
	}
	// Calendars first: the schedules may exclude them.
	rep.Items = append(rep.Items, parallel(calendars, o.concurrency, func(m manifest) planItem { return a.applyCalendar(m, o) })...)
	rep.Items = append(rep.Items, parallel(schedules, o.concurrency, func(m manifest) planItem {
		v, ok := owned[m.Name]
		return a.applySchedule(m, o, v, ok)
	})...)
	if o.prune {
		inFiles := map[string]bool{}
		for _, m := range schedules {
			inFiles[m.Name] = true
		}
		var gone []manifest
		for _, name := range sortedKeys(owned) {
			if !inFiles[name] {
				gone = append(gone, manifest{Kind: KindSchedule, Name: name})
			}
		}
		rep.Items = append(rep.Items, parallel(gone, o.concurrency, func(m manifest) planItem {
			it := planItem{Action: actDelete, Kind: KindSchedule, Name: m.Name, Version: owned[m.Name]}
			if o.dryRun {
				return it
			}
			if _, err := a.api.DeleteScheduleWithResponse(a.ctx, m.Name); err != nil && !client.IsNotFound(err) {
				return failed(it, err)
			}
			return it
		})...)
	}
	rep.Summary = map[string]int{}
	for _, act := range []string{actCreate, actUpdate, actUnchanged, actDelete, actConflict, actError} {
		rep.Summary[act] = 0
	}
	for _, it := range rep.Items {
		rep.Summary[it.Action]++
	}
	return rep, nil
}

// parallel runs f on every manifest, at most n at once, and answers in the manifests' order.
func parallel(ms []manifest, n int, f func(manifest) planItem) []planItem {
	out := make([]planItem, len(ms))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = f(m)
			out[i].Source = m.Source
		}()
	}
	wg.Wait()
	return out
}

func failed(it planItem, err error) planItem {
	it.Action, it.Error, it.err = actError, err.Error(), err
	return it
}

// applySchedule plans or applies one Schedule document. version is the set's schedule of
// that name as listed (owned false: the set has none of that name).
func (a *app) applySchedule(m manifest, o applyOptions, version int64, owned bool) planItem {
	it := planItem{Kind: KindSchedule, Name: m.Name}
	body, err := scheduleBody(m, o.set)
	if err != nil {
		return failed(it, &ManifestError{fmt.Errorf("%s: %w", m.Source, err)})
	}
	params := &client.PutScheduleParams{}
	if o.dryRun {
		params.DryRun = &o.dryRun
	}
	switch {
	case owned:
		params.IfMatch = ptrTo(strconv.Quote(strconv.FormatInt(version, 10)))
	case !o.dryRun:
		star := client.PutScheduleParamsIfNoneMatch("*")
		params.IfNoneMatch = &star
	}
	ans, err := a.putSchedule(m.Name, params, body)
	if !owned && client.StatusOf(err) == http.StatusPreconditionFailed {
		// The name is held, by no schedule of the set: whose is it?
		cur, gerr := a.api.GetScheduleWithResponse(a.ctx, m.Name)
		if gerr != nil {
			return failed(it, gerr)
		}
		ans = putAnswer{Outcome: "exists", Schedule: *cur.JSON200}
		err = nil
	}
	if err != nil {
		return failed(it, err)
	}
	if ans.Outcome == "created" {
		it.Action, it.SigningSecret = actCreate, ans.SigningSecret
		it.Version = deref(ans.Schedule.Version)
		return it
	}
	if !owned {
		// It exists and the set does not own it: a conflict, unless --adopt takes over a
		// schedule no set owns.
		it.Owner = labelOf(ans.Schedule, SetLabel)
		if it.Owner != o.set && (it.Owner != "" || !o.adopt) {
			it.Action = actConflict
			return it
		}
		params := &client.PutScheduleParams{IfMatch: ptrTo(strconv.Quote(strconv.FormatInt(deref(ans.Schedule.Version), 10)))}
		if o.dryRun {
			params.DryRun = &o.dryRun
		}
		if ans, err = a.putSchedule(m.Name, params, body); err != nil {
			return failed(it, err)
		}
	}
	it.Changes, it.Version = ans.Changes, deref(ans.Schedule.Version)
	it.Action = actUpdate
	if ans.Outcome == "unchanged" {
		it.Action = actUnchanged
	}
	return it
}

// putAnswer is what apply reads of a PUT's answer.
type putAnswer struct {
	Outcome       string          `json:"outcome"`
	Changes       []fieldChange   `json:"changes"`
	Schedule      client.Schedule `json:"schedule"`
	SigningSecret string          `json:"signing_secret"`
}

func (a *app) putSchedule(name string, params *client.PutScheduleParams, body []byte) (putAnswer, error) {
	r, err := a.api.PutScheduleWithBodyWithResponse(a.ctx, name, params, "application/json", bytes.NewReader(body))
	if err != nil {
		return putAnswer{}, err
	}
	var ans putAnswer
	if err := json.Unmarshal(r.Body, &ans); err != nil {
		return putAnswer{}, fmt.Errorf("PUT /schedules/%s: decode answer: %w", name, err)
	}
	return ans, nil
}

// scheduleBody is a Schedule document as the PUT body: its labels with the set's.
func scheduleBody(m manifest, set string) ([]byte, error) {
	body := make(map[string]any, len(m.Body))
	for k, v := range m.Body {
		body[k] = v
	}
	labels := map[string]any{}
	if l, ok := body["labels"]; ok && l != nil {
		lm, ok := l.(map[string]any)
		if !ok {
			return nil, errors.New("labels must be an object")
		}
		for k, v := range lm {
			labels[k] = v
		}
	}
	if v, ok := labels[SetLabel]; ok && v != set {
		return nil, fmt.Errorf("labels.%s is %v, not the set %q being applied", SetLabel, v, set)
	}
	labels[SetLabel] = set
	body["labels"] = labels
	return json.Marshal(body)
}

// applyCalendar plans or applies one Calendar document: created when missing, replaced
// (optimistically, at the version read) when it differs, left alone when it does not.
func (a *app) applyCalendar(m manifest, o applyOptions) planItem {
	it := planItem{Kind: KindCalendar, Name: m.Name}
	body, err := json.Marshal(m.Body)
	if err != nil {
		return failed(it, err)
	}
	cur, err := a.api.GetCalendarWithResponse(a.ctx, m.Name)
	if client.IsNotFound(err) {
		it.Action = actCreate
		if o.dryRun {
			return it
		}
		r, err := a.api.CreateCalendarWithBodyWithResponse(a.ctx, nil, "application/json", bytes.NewReader(body))
		if err != nil {
			return failed(it, err)
		}
		it.Version = deref(r.JSON201.Version)
		return it
	}
	if err != nil {
		return failed(it, err)
	}
	it.Version = deref(cur.JSON200.Version)
	it.Changes = calendarChanges(cur.Body, m.Body)
	if len(it.Changes) == 0 {
		it.Action = actUnchanged
		return it
	}
	it.Action = actUpdate
	if o.dryRun {
		return it
	}
	r, err := a.api.ReplaceCalendarWithBodyWithResponse(a.ctx, m.Name,
		&client.ReplaceCalendarParams{IfMatch: ptrTo(strconv.Quote(strconv.FormatInt(it.Version, 10)))}, "application/json", bytes.NewReader(body))
	if err != nil {
		return failed(it, err)
	}
	it.Version = deref(r.JSON200.Version)
	return it
}

// calendarChanges compares a stored calendar with a document, as the server stores one
// (time zone UTC by default, dates in order without repeats).
func calendarChanges(stored []byte, doc map[string]any) []fieldChange {
	var cur struct {
		Timezone string            `json:"timezone"`
		Dates    []string          `json:"dates"`
		Ranges   []json.RawMessage `json:"ranges"`
	}
	_ = json.Unmarshal(stored, &cur)
	b, _ := json.Marshal(doc)
	var want struct {
		Timezone string            `json:"timezone"`
		Dates    []string          `json:"dates"`
		Ranges   []json.RawMessage `json:"ranges"`
	}
	_ = json.Unmarshal(b, &want)
	if want.Timezone == "" {
		want.Timezone = "UTC"
	}
	slices.Sort(want.Dates)
	want.Dates = slices.Compact(want.Dates)
	var out []fieldChange
	add := func(field string, from, to any) {
		f, _ := json.Marshal(from)
		t, _ := json.Marshal(to)
		if !sameJSON(f, t) {
			out = append(out, fieldChange{Field: field, From: f, To: t})
		}
	}
	add("timezone", cur.Timezone, want.Timezone)
	add("dates", nonNil(cur.Dates), nonNil(want.Dates))
	add("ranges", nonNil(cur.Ranges), nonNil(want.Ranges))
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// sameJSON compares two JSON documents by value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	ax, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return bytes.Equal(ax, by)
}

func labelOf(s client.Schedule, key string) string {
	if s.Labels == nil {
		return ""
	}
	return (*s.Labels)[key]
}

func ptrTo[T any](v T) *T { return &v }

func deref[T ~int | ~int64](p *T) int64 {
	if p == nil {
		return 0
	}
	return int64(*p)
}

// outcome is the error an apply ends with: the first failed request's, else a conflict.
func (r *applyReport) outcome() error {
	var conflicts []string
	for _, it := range r.Items {
		if it.err != nil {
			return fmt.Errorf("%s %s: %w", strings.ToLower(it.Kind), it.Name, it.err)
		}
		if it.Action == actConflict {
			conflicts = append(conflicts, it.Name)
		}
	}
	if len(conflicts) > 0 {
		return &ConflictError{Names: conflicts}
	}
	return nil
}

// printReport prints the plan or what was done: a line per document (an update's changed
// fields each on a line of their own), then the counts; the report itself with -o json|yaml.
func (a *app) printReport(r *applyReport) error {
	if a.output != "table" {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		return a.printRaw(b)
	}
	items := append([]planItem{}, r.Items...)
	order := map[string]int{actError: 0, actConflict: 1, actCreate: 2, actUpdate: 3, actDelete: 4, actUnchanged: 5}
	sort.SliceStable(items, func(i, j int) bool {
		if order[items[i].Action] != order[items[j].Action] {
			return order[items[i].Action] < order[items[j].Action]
		}
		if items[i].Kind != items[j].Kind {
			return items[i].Kind < items[j].Kind
		}
		return items[i].Name < items[j].Name
	})
	tw := tabwriter.NewWriter(a.env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACTION\tKIND\tNAME\tDETAIL")
	for _, it := range items {
		detail := ""
		switch it.Action {
		case actConflict:
			detail = "owned by no set: left alone (--adopt takes it over)"
			if it.Owner != "" {
				detail = fmt.Sprintf("owned by set %q: left alone", it.Owner)
			}
		case actError:
			detail = it.Error
		case actCreate:
			if it.SigningSecret != "" {
				detail = "signing_secret " + it.SigningSecret + " (shown once)"
			}
		}
		if it.Action == actUpdate && len(it.Changes) > 0 {
			for i, ch := range it.Changes {
				line := fmt.Sprintf("%s: %s → %s", ch.Field, compact(ch.From), compact(ch.To))
				if i == 0 {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", it.Action, it.Kind, it.Name, line)
				} else {
					fmt.Fprintf(tw, "\t\t\t%s\n", line)
				}
			}
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", it.Action, it.Kind, it.Name, detail)
	}
	_ = tw.Flush()
	s := r.Summary
	if r.DryRun {
		_, err := fmt.Fprintf(a.env.Stdout, "plan for set %s (dry run, nothing changed): %d to create, %d to update, %d unchanged, %d to delete, %d conflict(s), %d error(s)\n",
			r.Set, s[actCreate], s[actUpdate], s[actUnchanged], s[actDelete], s[actConflict], s[actError])
		return err
	}
	_, err := fmt.Fprintf(a.env.Stdout, "set %s: %d created, %d updated, %d unchanged, %d deleted, %d conflict(s), %d error(s)\n",
		r.Set, s[actCreate], s[actUpdate], s[actUnchanged], s[actDelete], s[actConflict], s[actError])
	return err
}

// compact is a JSON value on one line, cut at 120 characters.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	s := b.String()
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}
