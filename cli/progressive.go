package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"
)

// Progressive delivery from the command line (docs/progressive.md): a rollout's waves and
// its freeze, and the global freeze. A strategy goes in `rollout create`'s JSON body.

var (
	waveCols   = []col{{"WAVE", "wave"}, {"STATUS", "status"}, {"DATABASES", "databases"}, {"BAKE UNTIL", "bake_until"}, {"CHECKED", "checked_at"}, {"HEALTH", "health_summary"}, {"REASON", "reason"}}
	freezeCols = []col{{"ID", "id"}, {"SCOPE", "scope"}, {"ROLLOUT", "rollout_id"}, {"REASON", "reason"}, {"FROZEN BY", "frozen_by"}, {"FROZEN AT", "frozen_at"}, {"LIFTED BY", "lifted_by"}, {"LIFTED AT", "lifted_at"}}
)

func init() {
	Groups["rollout"] = "manage rollouts: list, get, create, tasks, waves, pause, resume, cancel, freeze, unfreeze, watch"
	Groups["freeze"] = "the global freeze (nothing new starts anywhere while it holds): get, set, lift"
	r := operations["rollout"]
	r["waves"] = op{usage: "ID   (each wave: its databases, bake, health results and why it stopped)", flags: func(fs *flag.FlagSet) func(c *cmd) error {
		return func(c *cmd) error {
			if err := c.want(1, "ID"); err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.client.Do(c.ctx, "GET", "/api/v1/rollouts/"+esc(c.args[0]), nil, &raw); err != nil {
				return err
			}
			var view struct {
				Waves []map[string]any `json:"waves"`
			}
			if err := json.Unmarshal(raw, &view); err != nil {
				return fmt.Errorf("decode answer: %w", err)
			}
			if c.output == "json" {
				b, _ := json.Marshal(map[string]any{"items": nonNilItems(view.Waves)})
				return c.printJSON(b)
			}
			for _, w := range view.Waves {
				w["databases"] = joinAny(w["databases"])
				w["health_summary"] = healthSummary(w["health"])
			}
			table(c.env.Stdout, waveCols, view.Waves)
			return nil
		}
	}}
	r["freeze"] = op{usage: "ID --reason TEXT   (nothing new of the rollout starts until it is unfrozen)", flags: func(fs *flag.FlagSet) func(c *cmd) error {
		reason := fs.String("reason", "", "why (kept in the rollout's freeze history)")
		return func(c *cmd) error {
			if err := c.want(1, "ID"); err != nil {
				return err
			}
			return c.call("POST", "/api/v1/rollouts/"+esc(c.args[0])+"/freeze", map[string]any{"reason": *reason}, rolloutRec)
		}
	}}
	r["unfreeze"] = simple("ID", 1, "POST", func(a []string) string { return "/api/v1/rollouts/" + esc(a[0]) + "/unfreeze" }, rolloutRec)
	operations["freeze"] = map[string]op{
		"get": {usage: "   (the global freeze in force, the rollouts frozen, and the history)", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			return func(c *cmd) error {
				if err := c.want(0, "no arguments"); err != nil {
					return err
				}
				return c.showFreeze("GET", "/api/v1/freeze", nil)
			}
		}},
		"set": {usage: "--reason TEXT   (freeze everything: no rollout task or device execution starts)", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			reason := fs.String("reason", "", "why (kept in the history with who froze and when)")
			return func(c *cmd) error {
				if err := c.want(0, "no arguments"); err != nil {
					return err
				}
				return c.showFreeze("POST", "/api/v1/freeze", map[string]any{"reason": *reason})
			}
		}},
		"lift": {usage: "   (lift the global freeze)", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			return func(c *cmd) error {
				if err := c.want(0, "no arguments"); err != nil {
					return err
				}
				return c.showFreeze("DELETE", "/api/v1/freeze", nil)
			}
		}},
	}
}

// showFreeze calls a freeze route and prints the state: the freeze in force (or "not
// frozen"), the rollouts frozen, and the history.
func (c *cmd) showFreeze(method, path string, body any) error {
	var raw json.RawMessage
	if err := c.client.Do(c.ctx, method, path, body, &raw); err != nil {
		return err
	}
	if c.output == "json" {
		return c.printJSON(raw)
	}
	var st struct {
		Frozen         map[string]any   `json:"frozen"`
		RolloutsFrozen []map[string]any `json:"rollouts_frozen"`
		History        []map[string]any `json:"history"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	w := c.env.Stdout
	if st.Frozen == nil {
		fmt.Fprintln(w, "not frozen")
	} else {
		fmt.Fprintf(w, "FROZEN by %s since %s: %s\n", cell(st.Frozen["frozen_by"]), cell(st.Frozen["frozen_at"]), cell(st.Frozen["reason"]))
	}
	if len(st.RolloutsFrozen) > 0 {
		fmt.Fprintln(w, "\nrollouts frozen:")
		table(w, freezeCols, st.RolloutsFrozen)
	}
	if len(st.History) > 0 {
		fmt.Fprintln(w, "\nhistory:")
		table(w, freezeCols, st.History)
	}
	return nil
}

func nonNilItems(items []map[string]any) []map[string]any {
	if items == nil {
		return []map[string]any{}
	}
	return items
}

func joinAny(v any) string {
	list, _ := v.([]any)
	parts := make([]string, len(list))
	for i, x := range list {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}

// healthSummary reads a wave's health results as "2/3 ok; billing: <why>".
func healthSummary(v any) string {
	list, _ := v.([]any)
	if len(list) == 0 {
		return ""
	}
	ok := 0
	var failed []string
	for _, x := range list {
		r, _ := x.(map[string]any)
		if r["ok"] == true {
			ok++
			continue
		}
		failed = append(failed, fmt.Sprintf("%v: %v", r["target"], r["detail"]))
	}
	s := fmt.Sprintf("%d/%d ok", ok, len(list))
	if len(failed) > 0 {
		s += "; " + strings.Join(failed, "; ")
	}
	return s
}

// windowFlags collects --window "CRON|DURATION[|TZ]" into the API's windows.
type windowFlags []map[string]string

func (w *windowFlags) String() string { return fmt.Sprint(*w) }

func (w *windowFlags) Set(v string) error {
	parts := strings.Split(v, "|")
	if len(parts) < 2 || len(parts) > 3 {
		return fmt.Errorf(`want "CRON|DURATION" or "CRON|DURATION|TIMEZONE", got %q`, v)
	}
	win := map[string]string{"cron": strings.TrimSpace(parts[0]), "duration": strings.TrimSpace(parts[1])}
	if len(parts) == 3 {
		win["timezone"] = strings.TrimSpace(parts[2])
	}
	*w = append(*w, win)
	return nil
}
