package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickgate/tickgate/client"
)

// `tickgate task …`: device tasks (docs/devices.md, docs/progressive.md), and the agent's
// side of an execution (ack, report).

var (
	taskCols = []col{{"ID", "id"}, {"STATUS", "status"}, {"TARGET", "target_count"}, {"COUNTS", "counts"}, {"CREATED", "created_at"}, {"FINISHED", "finished_at"}}
	taskRec  = []col{{"id", "id"}, {"status", "status"}, {"waiting_cause", "waiting_cause"}, {"payload", "payload"}, {"target_count", "target_count"}, {"rate", "rate"}, {"windows", "windows"},
		{"counts", "counts"}, {"error", "error"}, {"started_at", "started_at"}, {"finished_at", "finished_at"}}
	taskDevCols = []col{{"ID", "id"}, {"TASK", "task_id"}, {"DEVICE", "device"}, {"PC", "pc"}, {"STATUS", "status"}, {"ATTEMPT", "attempt"}, {"SENT", "sent_at"}}
	taskDevRec  = []col{{"id", "id"}, {"task_id", "task_id"}, {"device", "device"}, {"pc", "pc"}, {"status", "status"}, {"attempt", "attempt"},
		{"error", "error"}, {"sent_at", "sent_at"}, {"timeout_at", "timeout_at"}, {"completed_at", "completed_at"}}
	eventCols = []col{{"ID", "id"}, {"ATTEMPT", "attempt"}, {"TYPE", "type"}, {"DETAIL", "detail"}, {"AT", "created_at"}}
)

func taskCmd(a *app) *cobra.Command {
	byID := func(verb, short string, fields []col, call func(id int64) ([]byte, error)) *cobra.Command {
		return simpleCmd(verb, short, "ID", func(args []string) ([]byte, error) {
			id, err := idArg(args[0])
			if err != nil {
				return nil, err
			}
			return call(id)
		}, a, fields)
	}
	return group("task", "Manage device tasks: list, get, create, cancel, devices, watch, execution, events, ack, report",
		taskListCmd(a),
		byID("get ID", "A device task with its counts", taskRec, func(id int64) ([]byte, error) { return body(a.api.GetTaskWithResponse(a.ctx, id)) }),
		taskCreateCmd(a),
		byID("cancel ID", "Cancel a device task", taskRec, func(id int64) ([]byte, error) { return body(a.api.CancelTaskWithResponse(a.ctx, id)) }),
		taskDevicesCmd(a), taskWatchCmd(a),
		byID("execution TASK_DEVICE_ID", "One execution of a task on a device", taskDevRec, func(id int64) ([]byte, error) {
			return body(a.api.GetTaskDeviceWithResponse(a.ctx, id))
		}),
		taskEventsCmd(a), taskAckCmd(a), taskReportCmd(a))
}

func taskListCmd(a *app) *cobra.Command {
	var lf *listFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List device tasks",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.list(lf, func(cursor *string, limit int) ([]byte, error) {
				return body(a.api.ListTasksWithResponse(a.ctx, &client.ListTasksParams{Cursor: cursor, Limit: &limit}))
			}, taskCols)
		},
	}
	lf = addListFlags(cmd)
	return cmd
}

func taskDevicesCmd(a *app) *cobra.Command {
	var lf *listFlags
	cmd := &cobra.Command{
		Use:   "devices ID",
		Short: "A device task's executions",
		Args:  exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := idArg(args[0])
			if err != nil {
				return err
			}
			return a.list(lf, func(cursor *string, limit int) ([]byte, error) {
				return body(a.api.ListTaskDevicesWithResponse(a.ctx, id, &client.ListTaskDevicesParams{Cursor: cursor, Limit: &limit}))
			}, taskDevCols)
		},
	}
	lf = addListFlags(cmd)
	return cmd
}

func taskEventsCmd(a *app) *cobra.Command {
	var lf *listFlags
	cmd := &cobra.Command{
		Use:   "events TASK_DEVICE_ID",
		Short: "An execution's events",
		Args:  exactArgs(1, "TASK_DEVICE_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := idArg(args[0])
			if err != nil {
				return err
			}
			return a.list(lf, func(cursor *string, limit int) ([]byte, error) {
				if cursor != nil {
					return []byte(`{"items":[]}`), nil // the route answers every event at once
				}
				return body(a.api.ListTaskDeviceEventsWithResponse(a.ctx, id))
			}, eventCols)
		},
	}
	lf = addListFlags(cmd)
	return cmd
}

func taskCreateCmd(a *app) *cobra.Command {
	var file, payload string
	var target, rate int
	var windows windowFlags
	cmd := &cobra.Command{
		Use:     "create [--payload JSON] [--target-count N] [--rate N] [--window 'CRON|DURATION[|TZ]']… | -f FILE",
		Short:   "Queue a device task (rate and windows: docs/progressive.md)",
		Example: `  tickgate task create --payload '{"cmd":"flash"}' --rate 30 --window '0 1 * * 1-5|4h|Europe/Paris'`,
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := a.jsonBody(file, "")
			if err != nil {
				return err
			}
			if b == nil {
				p, err := rawJSON("payload", payload)
				if err != nil {
					return err
				}
				req := map[string]any{"payload": p}
				if target > 0 {
					req["target_count"] = target
				}
				if rate != 0 {
					req["rate"] = map[string]any{"per_minute": rate}
				}
				if len(windows) > 0 {
					req["windows"] = windows
				}
				b, _ = json.Marshal(req)
			}
			rd, _ := jsonReader(b)
			raw, err := body(a.api.CreateTaskWithBodyWithResponse(a.ctx, nil, "application/json", rd))
			if err != nil {
				return err
			}
			return a.show(raw, taskRec)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "request body from a JSON file (- for stdin)")
	cmd.Flags().StringVar(&payload, "payload", "{}", "the command's payload (JSON)")
	cmd.Flags().IntVar(&target, "target-count", 0, "run on this many devices (default: every eligible one)")
	cmd.Flags().IntVar(&rate, "rate", 0, "at most this many executions sent per minute across the farm")
	cmd.Flags().Var(&windows, "window", `a window executions are sent in: "CRON|DURATION" or "CRON|DURATION|TIMEZONE" (repeatable)`)
	return cmd
}

func taskAckCmd(a *app) *cobra.Command {
	var attempt int
	cmd := &cobra.Command{
		Use:   "ack TASK_DEVICE_ID [--attempt N]",
		Short: "Acknowledge a command (as the PC's agent)",
		Args:  exactArgs(1, "TASK_DEVICE_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := idArg(args[0])
			if err != nil {
				return err
			}
			req := map[string]any{}
			if attempt > 0 {
				req["attempt"] = attempt
			}
			rd, _ := jsonReader(req)
			raw, err := body(a.api.AgentAckWithBodyWithResponse(a.ctx, id, "application/json", rd))
			if err != nil {
				return err
			}
			return a.show(raw, taskDevRec)
		},
	}
	cmd.Flags().IntVar(&attempt, "attempt", 0, "the attempt being acknowledged")
	return cmd
}

func taskReportCmd(a *app) *cobra.Command {
	var status, errText string
	var retryable bool
	var attempt int
	cmd := &cobra.Command{
		Use:   "report TASK_DEVICE_ID --status succeeded|failed [--error TEXT] [--retryable=false] [--attempt N]",
		Short: "Report a command's result (as the PC's agent)",
		Args:  exactArgs(1, "TASK_DEVICE_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := idArg(args[0])
			if err != nil {
				return err
			}
			req := map[string]any{"status": status}
			if errText != "" {
				req["error"] = errText
			}
			if !retryable {
				req["retryable"] = false
			}
			if attempt > 0 {
				req["attempt"] = attempt
			}
			rd, _ := jsonReader(req)
			raw, err := body(a.api.AgentReportResultWithBodyWithResponse(a.ctx, id, nil, "application/json", rd))
			if err != nil {
				return err
			}
			return a.show(raw, taskDevRec)
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "succeeded or failed")
	cmd.Flags().StringVar(&errText, "error", "", "error message")
	cmd.Flags().BoolVar(&retryable, "retryable", true, "false: the command cannot work on this device (straight to FAILED_FINAL)")
	cmd.Flags().IntVar(&attempt, "attempt", 0, "the attempt being reported")
	return cmd
}

func taskWatchCmd(a *app) *cobra.Command {
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "watch ID [--interval DUR]",
		Short: "Follow a device task to its end (exit 8 when it ends failed or canceled)",
		Args:  exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := idArg(args[0])
			if err != nil {
				return err
			}
			return a.watch(interval, func() (string, bool, string, error) {
				raw, err := body(a.api.GetTaskWithResponse(a.ctx, id))
				if err != nil {
					return "", false, "", err
				}
				var t struct {
					Status string           `json:"status"`
					Counts map[string]int64 `json:"counts"`
				}
				if err := json.Unmarshal(raw, &t); err != nil {
					return "", false, "", fmt.Errorf("decode answer: %w", err)
				}
				var total, finished int64
				for k, v := range t.Counts {
					total += v
					if k != "active" && k != "pending" && k != "running" && k != "total" {
						finished += v
					}
				}
				if v, ok := t.Counts["total"]; ok {
					total -= v
				}
				line := fmt.Sprintf("task %d %s %d/%d %s %s", id, progressBar(finished, total, 30), finished, total, t.Status, counts(t.Counts))
				done := t.Status == "success" || t.Status == "failed" || t.Status == "canceled"
				failed := ""
				if t.Status == "failed" || t.Status == "canceled" {
					failed = fmt.Sprintf("task %d ended %s", id, t.Status)
				}
				return line, done, failed, nil
			})
		},
	}
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "poll interval")
	return cmd
}
