package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/tickgate/tickgate/client"
)

// Shell completion (`tickgate completion bash|zsh|fish`) completes commands and flags from
// the tree, and schedule and calendar names from the server the flags point at.

// completeSchedules completes a schedule name as the first argument.
func (a *app) completeSchedules(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) != 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.scheduleNames(toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeCalendars completes a calendar name as the first argument.
func (a *app) completeCalendars(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) != 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.calendarNames(toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeCalendarsFlag completes a comma-separated list of calendar names.
func (a *app) completeCalendarsFlag(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	done, last := "", toComplete
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		done, last = toComplete[:i+1], toComplete[i+1:]
	}
	var out []string
	for _, n := range a.calendarNames(last) {
		out = append(out, done+n)
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// maxCompletions is how many names a completion asks the server for.
const maxCompletions = 200

// scheduleNames are the names starting with prefix (none when the server cannot be asked:
// a completion says nothing rather than an error).
func (a *app) scheduleNames(prefix string) []string {
	if a.connect() != nil {
		return nil
	}
	limit := maxCompletions
	p := client.ListSchedulesParams{Limit: &limit}
	if prefix != "" {
		p.Name = &prefix
	}
	var out []string
	for s, err := range a.api.Schedules(a.ctx, &p) {
		if err != nil || len(out) >= maxCompletions {
			break
		}
		if s.Name != nil && strings.HasPrefix(*s.Name, prefix) {
			out = append(out, *s.Name)
		}
	}
	return out
}

func (a *app) calendarNames(prefix string) []string {
	if a.connect() != nil {
		return nil
	}
	var out []string
	for c, err := range a.api.Calendars(a.ctx) {
		if err != nil || len(out) >= maxCompletions {
			break
		}
		if c.Name != nil && strings.HasPrefix(*c.Name, prefix) {
			out = append(out, *c.Name)
		}
	}
	return out
}
