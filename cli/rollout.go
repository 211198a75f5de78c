package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickgate/tickgate/client"
)

// `tickgate rollout …` (docs/rollouts.md, docs/progressive.md): a rollout's waves and its
// freeze too; a strategy goes in `rollout create`'s JSON body.

var (
	rolloutCols = []col{{"ID", "id"}, {"NAME", "name"}, {"STATUS", "status"}, {"PARALLEL", "parallel_limit"}, {"DONE", "progress.finished"}, {"TOTAL", "progress.total"},
		{"WAVE", "wave.open"}, {"OF", "wave.count"}, {"REASON", "status_reason"}}
	rolloutRec = []col{{"id", "id"}, {"name", "name"}, {"status", "status"}, {"status_reason", "status_reason"}, {"parallel_limit", "parallel_limit"},
		{"progress", "progress"}, {"counts", "counts"}, {"wave", "wave"}, {"strategy", "strategy"}, {"frozen", "frozen"}, {"created_at", "created_at"}}
	taskRunCols = []col{{"ID", "id"}, {"DATABASE", "database"}, {"TYPE", "type"}, {"VERSION", "version"}, {"WAVE", "wave"}, {"STATUS", "status"}, {"WAITING", "waiting_cause"}, {"STARTED", "started_at"}, {"FINISHED", "finished_at"}}
	waveCols    = []col{{"WAVE", "wave"}, {"STATUS", "status"}, {"DATABASES", "databases"}, {"BAKE UNTIL", "bake_until"}, {"CHECKED", "checked_at"}, {"HEALTH", "health_summary"}, {"REASON", "reason"}}
)

func rolloutCmd(a *app) *cobra.Command {
	byID := func(verb, short string, call func(id int64) ([]byte, error)) *cobra.Command {
		return simpleCmd(verb+" ID", short, "ID", func(args []string) ([]byte, error) {
			id, err := idArg(args[0])
			if err != nil {
				return nil, err
			}
			return call(id)
		}, a, rolloutRec)
	}
	return group("rollout", "Manage rollouts: list, get, create, tasks, waves, pause, resume, cancel, freeze, unfreeze, watch",
		rolloutListCmd(a),
		byID("get", "A rollout with status counts and progress", func(id int64) ([]byte, error) {
			r, err := a.api.GetRolloutWithResponse(a.ctx, id)
			return body(r, err)
		}),
		rolloutCreateCmd(a), rolloutTasksCmd(a), rolloutWavesCmd(a),
		byID("pause", "Pause a rollout", func(id int64) ([]byte, error) {
			r, err := a.api.PauseRolloutWithResponse(a.ctx, id)
			return body(r, err)
		}),
		byID("resume", "Resume a rollout", func(id int64) ([]byte, error) {
			r, err := a.api.ResumeRolloutWithResponse(a.ctx, id)
			return body(r, err)
		}),
		byID("cancel", "Cancel a rollout", func(id int64) ([]byte, error) {
			r, err := a.api.CancelRolloutWithResponse(a.ctx, id)
			return body(r, err)
		}),
		rolloutFreezeCmd(a),
		byID("unfreeze", "Unfreeze a rollout", func(id int64) ([]byte, error) {
			r, err := a.api.UnfreezeRolloutWithResponse(a.ctx, id)
			return body(r, err)
		}),
		rolloutWatchCmd(a))
}

// answer is what every generated response holds: its raw body.
type answer interface {
	StatusCode() int
}

// body is a generated response's raw body (the error passed on).
func body[R answer](r R, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return rawBody(r), nil
}

// simpleCmd is a command of n positional arguments (named by names) whose call answers one
// object, printed with fields.
func simpleCmd(use, short, names string, call func(args []string) ([]byte, error), a *app, fields []col) *cobra.Command {
	n := 0
	if names != "" {
		n = len(splitWords(names))
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs(n, names),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := call(args)
			if err != nil {
				return err
			}
			return a.show(raw, fields)
		},
	}
}

// idArg reads a positional ID (a positive integer).
func idArg(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("ID is a positive integer, got %q", s)
	}
	return id, nil
}

func rolloutListCmd(a *app) *cobra.Command {
	var lf *listFlags
	var status string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List rollouts, filtered by their derived status",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.list(lf, func(cursor *string, limit int) ([]byte, error) {
				p := client.ListRolloutsParams{Cursor: cursor, Limit: &limit}
				if status != "" {
					p.Status = &status
				}
				r, err := a.api.ListRolloutsWithResponse(a.ctx, &p)
				return body(r, err)
			}, rolloutCols)
		},
	}
	lf = addListFlags(cmd)
	cmd.Flags().StringVar(&status, "status", "", "only rollouts in these statuses (comma-separated: RUNNING, PAUSED, DONE, FAILED, CANCELED)")
	return cmd
}

func rolloutCreateCmd(a *app) *cobra.Command {
	var file, text string
	cmd := &cobra.Command{
		Use:   "create -f FILE | --json TEXT",
		Short: "Create a rollout with its tasks ({name, parallel_limit, tasks:[…], strategy?:{waves, bake, health, abort, rate, windows}})",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := a.jsonBody(file, text)
			if err != nil {
				return err
			}
			if b == nil {
				return usagef("rollout create: give the rollout with -f FILE or --json TEXT")
			}
			rd, _ := jsonReader(b)
			raw, err := body(a.api.CreateRolloutWithBodyWithResponse(a.ctx, nil, "application/json", rd))
			if err != nil {
				return err
			}
			return a.show(raw, rolloutRec)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "request body from a JSON file (- for stdin)")
	cmd.Flags().StringVar(&text, "json", "", "request body as JSON text")
	return cmd
}

func rolloutTasksCmd(a *app) *cobra.Command {
	var lf *listFlags
	var status string
	cmd := &cobra.Command{
		Use:   "tasks ID [--status S]",
		Short: "A rollout's task runs, each PENDING one with its waiting cause",
		Args:  exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := idArg(args[0])
			if err != nil {
				return err
			}
			return a.list(lf, func(cursor *string, limit int) ([]byte, error) {
				p := client.ListRolloutTasksParams{Cursor: cursor, Limit: &limit}
				if status != "" {
					p.Status = &status
				}
				return body(a.api.ListRolloutTasksWithResponse(a.ctx, id, &p))
			}, taskRunCols)
		},
	}
	lf = addListFlags(cmd)
	cmd.Flags().StringVar(&status, "status", "", "only tasks with this status")
	return cmd
}

func rolloutWavesCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "waves ID",
		Short: "Each wave of a rollout: its databases, bake, health results and why it stopped",
		Args:  exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := idArg(args[0])
			if err != nil {
				return err
			}
			raw, err := body(a.api.GetRolloutWithResponse(a.ctx, id))
			if err != nil {
				return err
			}
			var view struct {
				Waves []map[string]any `json:"waves"`
			}
			if err := json.Unmarshal(raw, &view); err != nil {
				return fmt.Errorf("decode answer: %w", err)
			}
			if view.Waves == nil {
				view.Waves = []map[string]any{}
			}
			if a.output != "table" {
				b, _ := json.Marshal(map[string]any{"items": view.Waves})
				return a.printRaw(b)
			}
			for _, w := range view.Waves {
				w["databases"] = joinAny(w["databases"])
				w["health_summary"] = healthSummary(w["health"])
			}
			table(a.env.Stdout, waveCols, view.Waves)
			return nil
		},
	}
}

func rolloutFreezeCmd(a *app) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "freeze ID --reason TEXT",
		Short: "Freeze a rollout: nothing new of it starts until it is unfrozen",
		Args:  exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := idArg(args[0])
			if err != nil {
				return err
			}
			raw, err := body(a.api.FreezeRolloutWithResponse(a.ctx, id, client.FreezeRequest{Reason: reason}))
			if err != nil {
				return err
			}
			return a.show(raw, rolloutRec)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (kept in the rollout's freeze history)")
	return cmd
}

func rolloutWatchCmd(a *app) *cobra.Command {
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "watch ID [--interval DUR]",
		Short: "Follow a rollout to its end (exit 8 when it ends FAILED or CANCELED)",
		Args:  exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := idArg(args[0])
			if err != nil {
				return err
			}
			return a.watch(interval, func() (string, bool, string, error) {
				r, err := a.api.GetRolloutWithResponse(a.ctx, id)
				if err != nil {
					return "", false, "", err
				}
				var ro struct {
					Name     string           `json:"name"`
					Status   string           `json:"status"`
					Counts   map[string]int64 `json:"counts"`
					Progress struct {
						Total    int64 `json:"total"`
						Finished int64 `json:"finished"`
					} `json:"progress"`
				}
				if err := json.Unmarshal(r.Body, &ro); err != nil {
					return "", false, "", fmt.Errorf("decode answer: %w", err)
				}
				line := fmt.Sprintf("%s %s %d/%d %s %s", ro.Name, progressBar(ro.Progress.Finished, ro.Progress.Total, 30),
					ro.Progress.Finished, ro.Progress.Total, ro.Status, counts(ro.Counts))
				// The server's status is the one definition of how a rollout ended
				// (docs/rollouts.md); the counts are only shown, never judged here.
				switch ro.Status {
				case "DONE":
					return line, true, "", nil
				case "FAILED", "CANCELED":
					return line, true, fmt.Sprintf("rollout %d ended %s", id, ro.Status), nil
				}
				return line, false, "", nil
			})
		},
	}
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "poll interval")
	return cmd
}

// watch polls fetch every interval and draws its progress until it reports done.
func (a *app) watch(interval time.Duration, fetch func() (line string, done bool, failed string, err error)) error {
	out := a.env.Stdout
	last := ""
	for {
		line, done, failed, err := fetch()
		if err != nil {
			if a.env.TTY {
				fmt.Fprintln(out)
			}
			return err
		}
		if a.env.TTY {
			fmt.Fprintf(out, "\r\033[K%s", line)
		} else if line != last {
			fmt.Fprintln(out, line)
		}
		last = line
		if done {
			if a.env.TTY {
				fmt.Fprintln(out)
			}
			if failed != "" {
				return &FailedError{Msg: failed}
			}
			return nil
		}
		select {
		case <-a.ctx.Done():
			if a.env.TTY {
				fmt.Fprintln(out)
			}
			return a.ctx.Err()
		case <-time.After(interval):
		}
	}
}
