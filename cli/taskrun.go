package cli

import (
	"github.com/spf13/cobra"
)

// `tickgate task-run …`: one task run of a rollout.

var taskRunRec = []col{{"id", "id"}, {"rollout_id", "rollout_id"}, {"database", "database"}, {"type", "type"}, {"version", "version"}, {"wave", "wave"}, {"status", "status"},
	{"waiting_cause", "waiting_cause"}, {"started_at", "started_at"}, {"finished_at", "finished_at"}, {"error", "error"}}

func taskRunCmd(a *app) *cobra.Command {
	byID := func(verb, short string, call func(id int64) ([]byte, error)) *cobra.Command {
		return simpleCmd(verb+" ID", short, "ID", func(args []string) ([]byte, error) {
			id, err := idArg(args[0])
			if err != nil {
				return nil, err
			}
			return call(id)
		}, a, taskRunRec)
	}
	return group("task-run", "Act on a rollout's task run: get, retry, skip, cancel, result",
		byID("get", "A task run", func(id int64) ([]byte, error) { return body(a.api.GetTaskRunWithResponse(a.ctx, id)) }),
		byID("retry", "Run a FAILED task run again", func(id int64) ([]byte, error) { return body(a.api.RetryTaskRunWithResponse(a.ctx, id)) }),
		byID("skip", "Skip a task run", func(id int64) ([]byte, error) { return body(a.api.SkipTaskRunWithResponse(a.ctx, id)) }),
		byID("cancel", "Cancel a task run", func(id int64) ([]byte, error) { return body(a.api.CancelTaskRunWithResponse(a.ctx, id)) }),
		taskRunResultCmd(a))
}

func taskRunResultCmd(a *app) *cobra.Command {
	var status, errText, output string
	cmd := &cobra.Command{
		Use:   "result ID --status DONE|FAILED [--error TEXT] [--output JSON]",
		Short: "Report an external task run's result",
		Args:  exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := idArg(args[0])
			if err != nil {
				return err
			}
			req := map[string]any{"status": status}
			if errText != "" {
				req["error"] = errText
			}
			if o, err := rawJSON("output", output); err != nil {
				return err
			} else if o != nil {
				req["output"] = o
			}
			rd, _ := jsonReader(req)
			raw, err := body(a.api.ReportTaskRunResultWithBodyWithResponse(a.ctx, id, "application/json", rd))
			if err != nil {
				return err
			}
			return a.show(raw, taskRunRec)
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "DONE or FAILED")
	cmd.Flags().StringVar(&errText, "error", "", "error message")
	cmd.Flags().StringVar(&output, "output", "", "the task's output (JSON)")
	// --output is the task's output here, so -o (table, json or yaml) is also --format.
	cmd.Flags().StringVarP(&a.output, "format", "o", "table", "output: table, json or yaml")
	return cmd
}
