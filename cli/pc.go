package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tickgate/tickgate/client"
)

// `tickgate pc …`: the PCs devices hang off (docs/devices.md), and an agent's claim.

var (
	pcCols = []col{{"NAME", "name"}, {"CAPACITY", "device_capacity"}, {"RUNNING", "slots.running"}, {"TARGET", "slots.target"}, {"ELIGIBLE", "slots.eligible"}}
	pcRec  = []col{{"name", "name"}, {"device_capacity", "device_capacity"}, {"slots", "slots"}, {"created_at", "created_at"}}
)

func pcCmd(a *app) *cobra.Command {
	var lf *listFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List PCs",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.list(lf, func(cursor *string, limit int) ([]byte, error) {
				return body(a.api.ListPCsWithResponse(a.ctx, &client.ListPCsParams{Cursor: cursor, Limit: &limit}))
			}, pcCols)
		},
	}
	lf = addListFlags(list)
	var capacity int
	create := &cobra.Command{
		Use:   "create NAME [--capacity N]",
		Short: "Add a PC",
		Args:  exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := map[string]any{"name": args[0]}
			if capacity != 0 {
				req["device_capacity"] = capacity
			}
			rd, _ := jsonReader(req)
			raw, err := body(a.api.CreatePCWithBodyWithResponse(a.ctx, nil, "application/json", rd))
			if err != nil {
				return err
			}
			return a.show(raw, pcRec)
		},
	}
	create.Flags().IntVar(&capacity, "capacity", 0, "device slots (default 20)")
	var maxN int
	claim := &cobra.Command{
		Use:   "claim NAME [--max N]",
		Short: "Take a PC's pending commands, marking them SENT (as the PC's agent)",
		Args:  exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := map[string]any{}
			if maxN > 0 {
				req["max"] = maxN
			}
			rd, _ := jsonReader(req)
			raw, err := body(a.api.AgentClaimWithBodyWithResponse(a.ctx, args[0], nil, "application/json", rd))
			if err != nil {
				return err
			}
			if a.output != "table" {
				return a.printRaw(raw)
			}
			var page struct {
				Items []map[string]any `json:"items"`
			}
			if err := json.Unmarshal(raw, &page); err != nil {
				return fmt.Errorf("decode answer: %w", err)
			}
			table(a.env.Stdout, append(append([]col{}, taskDevCols...), col{"PAYLOAD", "payload"}), page.Items)
			return nil
		},
	}
	claim.Flags().IntVar(&maxN, "max", 0, "at most this many commands")
	return group("pc", "Manage PCs: list, get, create, claim",
		list,
		simpleCmd("get NAME", "A PC with its slots", "NAME", func(args []string) ([]byte, error) {
			return body(a.api.GetPCWithResponse(a.ctx, args[0]))
		}, a, pcRec),
		create, claim)
}
