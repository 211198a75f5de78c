package cli

import (
	"github.com/spf13/cobra"

	"github.com/tickgate/tickgate/client"
)

// `tickgate device …` (docs/devices.md).

var (
	deviceCols = []col{{"SERIAL", "serial"}, {"PC", "pc"}, {"STATUS", "status"}, {"ERROR", "error"}, {"UPDATED", "updated_at"}}
	deviceRec  = []col{{"serial", "serial"}, {"pc", "pc"}, {"status", "status"}, {"error", "error"}, {"updated_at", "updated_at"}}
)

func deviceCmd(a *app) *cobra.Command {
	var lf *listFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List devices",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.list(lf, func(cursor *string, limit int) ([]byte, error) {
				return body(a.api.ListDevicesWithResponse(a.ctx, &client.ListDevicesParams{Cursor: cursor, Limit: &limit}))
			}, deviceCols)
		},
	}
	lf = addListFlags(list)
	var pc string
	create := &cobra.Command{
		Use:   "create SERIAL --pc PC",
		Short: "Add a device to a PC",
		Args:  exactArgs(1, "SERIAL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := body(a.api.CreateDeviceWithResponse(a.ctx, nil, client.CreateDeviceRequest{Pc: pc, Serial: args[0]}))
			if err != nil {
				return err
			}
			return a.show(raw, deviceRec)
		},
	}
	create.Flags().StringVar(&pc, "pc", "", "the PC the device is attached to")
	return group("device", "Manage devices: list, get, create, set-status",
		list,
		simpleCmd("get SERIAL", "A device", "SERIAL", func(args []string) ([]byte, error) {
			return body(a.api.GetDeviceWithResponse(a.ctx, args[0]))
		}, a, deviceRec),
		create,
		simpleCmd("set-status SERIAL STATUS", "Set a device online or offline (online resets a device in error)", "SERIAL STATUS", func(args []string) ([]byte, error) {
			rd, _ := jsonReader(map[string]any{"status": args[1]})
			return body(a.api.SetDeviceStatusWithBodyWithResponse(a.ctx, args[0], "application/json", rd))
		}, a, deviceRec))
}
