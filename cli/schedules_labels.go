package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"strings"
)

// Labels, selectors, bulk pause and resume and a schedule's history (docs/schedules.md).

var (
	historyCols   = []col{{"AT", "at"}, {"KIND", "kind"}, {"BY", "by"}, {"DOOR", "door"}, {"NOTE", "note"}, {"CHANGES", "changes"}}
	bulkStateCols = []col{{"NAME", "name"}, {"OUTCOME", "outcome"}}
)

// labelFlags collects repeated --label key=value flags into the labels object.
type labelFlags map[string]string

func (l labelFlags) String() string {
	parts := make([]string, 0, len(l))
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (l labelFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return usagef("--label %q: want key=value", s)
	}
	l[k] = v
	return nil
}

// scheduleListOp lists schedules, filtered by --state, --name and --selector.
func scheduleListOp() op {
	return op{usage: "[--selector SEL] [--state active|paused|completed] [--name TEXT] [--limit N] [--all]", flags: func(fs *flag.FlagSet) func(c *cmd) error {
		l := addListFlags(fs)
		selector := fs.String("selector", "", `only schedules whose labels match ("team=billing,tier!=gold")`)
		state := fs.String("state", "", "only schedules in this state: active, paused or completed")
		name := fs.String("name", "", "only names holding this text")
		return func(c *cmd) error {
			if err := c.want(0, "no arguments"); err != nil {
				return err
			}
			q := url.Values{}
			for k, v := range map[string]string{"selector": *selector, "state": *state, "name": *name} {
				if v != "" {
					q.Set(k, v)
				}
			}
			return c.list("/api/v1/schedules", q, l, scheduleCols)
		}
	}}
}

// scheduleStateOp pauses (or resumes) one schedule by name, or every schedule a --selector
// reaches (POST /schedules/pause), with a note for their history.
func scheduleStateOp(pause bool) op {
	command := "resume"
	if pause {
		command = "pause"
	}
	return op{usage: "(NAME | --selector SEL) [--note TEXT]", flags: func(fs *flag.FlagSet) func(c *cmd) error {
		note := fs.String("note", "", "why (kept in the schedule's history)")
		selector := fs.String("selector", "", `every schedule whose labels match ("team=billing")`)
		return func(c *cmd) error {
			body := map[string]any{}
			if *note != "" {
				body["note"] = *note
			}
			if *selector != "" {
				if err := c.want(0, "no NAME with --selector"); err != nil {
					return err
				}
				body["selector"] = *selector
				return c.callList("POST", "/api/v1/schedules/"+command, body, bulkStateCols)
			}
			if err := c.want(1, "NAME (or --selector SEL)"); err != nil {
				return err
			}
			return c.call("POST", "/api/v1/schedules/"+esc(c.args[0])+"/"+command, body, scheduleRec)
		}
	}}
}

// scheduleHistoryOp lists who paused, resumed or edited a schedule, newest first.
func scheduleHistoryOp() op {
	return op{usage: "NAME [--limit N] [--all]", flags: func(fs *flag.FlagSet) func(c *cmd) error {
		l := addListFlags(fs)
		return func(c *cmd) error {
			if err := c.want(1, "NAME"); err != nil {
				return err
			}
			return c.list("/api/v1/schedules/"+esc(c.args[0])+"/history", nil, l, historyCols)
		}
	}}
}

// callList sends a request whose answer is an object with items and prints the items as a
// table (the whole answer with -o json), then its counts.
func (c *cmd) callList(method, path string, body any, cols []col) error {
	var raw json.RawMessage
	if err := c.client.Do(c.ctx, method, path, body, &raw); err != nil {
		return err
	}
	if c.output == "json" {
		return c.printJSON(raw)
	}
	var answer struct {
		Items     []map[string]any `json:"items"`
		Changed   int              `json:"changed"`
		Unchanged int              `json:"unchanged"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	table(c.env.Stdout, cols, answer.Items)
	fmt.Fprintf(c.env.Stdout, "%d changed, %d unchanged\n", answer.Changed, answer.Unchanged)
	return nil
}
