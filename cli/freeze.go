package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tickgate/tickgate/client"
)

// `tickgate freeze …`: the global freeze (docs/progressive.md): nothing new starts anywhere
// while it holds.

var freezeCols = []col{{"ID", "id"}, {"SCOPE", "scope"}, {"ROLLOUT", "rollout_id"}, {"REASON", "reason"}, {"FROZEN BY", "frozen_by"}, {"FROZEN AT", "frozen_at"}, {"LIFTED BY", "lifted_by"}, {"LIFTED AT", "lifted_at"}}

func freezeCmd(a *app) *cobra.Command {
	var reason string
	set := &cobra.Command{
		Use:   "set --reason TEXT",
		Short: "Freeze everything: no rollout task or device execution starts",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.showFreeze(body(a.api.SetFreezeWithResponse(a.ctx, client.FreezeRequest{Reason: reason})))
		},
	}
	set.Flags().StringVar(&reason, "reason", "", "why (kept in the history with who froze and when)")
	return group("freeze", "The global freeze (nothing new starts anywhere while it holds): get, set, lift",
		&cobra.Command{
			Use:   "get",
			Short: "The global freeze in force, the rollouts frozen, and the history",
			Args:  exactArgs(0, ""),
			RunE: func(cmd *cobra.Command, _ []string) error {
				return a.showFreeze(body(a.api.GetFreezeWithResponse(a.ctx)))
			},
		},
		set,
		&cobra.Command{
			Use:   "lift",
			Short: "Lift the global freeze",
			Args:  exactArgs(0, ""),
			RunE: func(cmd *cobra.Command, _ []string) error {
				return a.showFreeze(body(a.api.LiftFreezeWithResponse(a.ctx)))
			},
		})
}

// showFreeze prints the freeze state: the freeze in force (or "not frozen"), the rollouts
// frozen, and the history.
func (a *app) showFreeze(raw []byte, err error) error {
	if err != nil {
		return err
	}
	if a.output != "table" {
		return a.printRaw(raw)
	}
	var st struct {
		Frozen         map[string]any   `json:"frozen"`
		RolloutsFrozen []map[string]any `json:"rollouts_frozen"`
		History        []map[string]any `json:"history"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	w := a.env.Stdout
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
