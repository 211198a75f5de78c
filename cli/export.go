package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/tickgate/tickgate/client"
)

// `tickgate export`: existing schedules (and the calendars they exclude) as manifest
// documents apply takes, so a team can adopt what it already runs (docs/gitops.md).

// exportedFields are the parts of a schedule's view a manifest keeps: its definition.
var exportedFields = []string{"spec", "action", "policies", "retry"}

func exportCmd(a *app) *cobra.Command {
	var selector, dir string
	cmd := &cobra.Command{
		Use:   "export [--selector SEL] [--dir DIR]",
		Short: "Write existing schedules, and the calendars they exclude, as manifest documents for apply",
		Long: `export writes each schedule the selector reaches (every schedule without one) as a Schedule
document — its name, labels, spec, action, policies and retry — and each calendar they
exclude as a Calendar document: YAML documents on standard output (a JSON array with
-o json), or one file per document in --dir. The set label (tickgate.dev/set) is left out:
the set is apply's to give. A schedule that no set owns is taken over by apply --adopt.`,
		Example: `  tickgate export --selector team=billing > schedules/billing.yaml
  tickgate export --dir schedules/ && tickgate apply -f schedules/ --set billing --adopt --dry-run`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			docs, err := a.export(selector)
			if err != nil {
				return err
			}
			if dir != "" {
				return a.writeExport(dir, docs)
			}
			if a.output == "json" {
				return a.printValue(docs)
			}
			for _, d := range docs {
				if _, err := fmt.Fprintln(a.env.Stdout, "---"); err != nil {
					return err
				}
				if err := writeYAML(a.env.Stdout, d); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&selector, "selector", "", `only schedules whose labels match ("team=billing")`)
	cmd.Flags().StringVar(&dir, "dir", "", "write one file per document into this directory (NAME.schedule.yaml, NAME.calendar.yaml)")
	return cmd
}

// export reads the schedules and their calendars as manifest documents: calendars first.
func (a *app) export(selector string) ([]map[string]any, error) {
	limit := 500
	p := client.ListSchedulesParams{Limit: &limit}
	if selector != "" {
		p.Selector = &selector
	}
	var schedules []map[string]any
	calendars := map[string]bool{}
	for s, err := range a.api.Schedules(a.ctx, &p) {
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		var view map[string]any
		if err := json.Unmarshal(b, &view); err != nil {
			return nil, err
		}
		doc := map[string]any{"kind": KindSchedule, "name": view["name"]}
		for _, k := range exportedFields {
			if v, ok := view[k]; ok && v != nil {
				doc[k] = v
			}
		}
		if labels, ok := view["labels"].(map[string]any); ok {
			delete(labels, SetLabel)
			if len(labels) > 0 {
				doc["labels"] = labels
			}
		}
		if spec, ok := view["spec"].(map[string]any); ok {
			if _, oneTime := spec["at"]; oneTime && view["after_completion"] != nil {
				doc["after_completion"] = view["after_completion"]
			}
			if names, ok := spec["exclude_calendars"].([]any); ok {
				for _, n := range names {
					calendars[fmt.Sprint(n)] = true
				}
			}
		}
		if view["metrics"] == true {
			doc["metrics"] = true
		}
		if view["paused"] == true {
			doc["paused"] = true // counts when apply creates it (elsewhere)
		}
		schedules = append(schedules, doc)
	}
	var docs []map[string]any
	for _, name := range sortedKeys(calendars) {
		r, err := a.api.GetCalendarWithResponse(a.ctx, name)
		if err != nil {
			return nil, fmt.Errorf("calendar %s: %w", name, err)
		}
		var view map[string]any
		if err := json.Unmarshal(r.Body, &view); err != nil {
			return nil, err
		}
		docs = append(docs, map[string]any{"kind": KindCalendar, "name": name, "timezone": view["timezone"], "dates": view["dates"], "ranges": view["ranges"]})
	}
	return append(docs, schedules...), nil
}

// writeExport writes one file per document into dir.
func (a *app) writeExport(dir string, docs []map[string]any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil { // #nosec G301 -- exported manifests belong in the user's repository, with its usual modes
		return err
	}
	for _, d := range docs {
		kind := "schedule"
		if d["kind"] == KindCalendar {
			kind = "calendar"
		}
		path := filepath.Join(dir, fmt.Sprintf("%s.%s.yaml", d["name"], kind))
		if a.output == "json" {
			path = path[:len(path)-len(".yaml")] + ".json"
		}
		f, err := os.Create(path) // #nosec G304 -- the file under the directory the user names
		if err != nil {
			return err
		}
		if a.output == "json" {
			enc := json.NewEncoder(f)
			enc.SetIndent("", "  ")
			err = enc.Encode(d)
		} else {
			err = writeYAML(f, d)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(a.env.Stderr, "wrote", path)
	}
	return nil
}
