package cli

import (
	"encoding/json"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tickgate/tickgate/client"
)

// `tickgate schedule …` (docs/schedules.md).

var (
	scheduleCols = []col{{"NAME", "name"}, {"STATE", "state"}, {"PAUSED", "paused"}, {"NEXT RUN", "next_run_at"}, {"LAST RUN", "last_run_at"},
		{"BUFFERED", "waiting.buffered"}, {"BACKFILL", "waiting.backfill"}, {"VERSION", "version"}, {"LABELS", "labels"}}
	scheduleRec = []col{{"name", "name"}, {"state", "state"}, {"paused", "paused"}, {"note", "note"}, {"spec", "spec"}, {"action", "action.kind"},
		{"overlap", "policies.overlap"}, {"max_concurrent", "policies.max_concurrent"}, {"labels", "labels"},
		{"after_completion", "after_completion"}, {"completed_at", "completed_at"},
		{"next_run_at", "next_run_at"}, {"last_run_at", "last_run_at"}, {"version", "version"},
		{"counters", "counters"}, {"waiting", "waiting"}, {"workflow_id", "workflow_id"}}
	runCols = []col{{"ID", "id"}, {"SCHEDULED", "scheduled_at"}, {"FIRED", "fired_at"}, {"TRIGGER", "trigger"}, {"STATUS", "status"}, {"REASON", "reason"}, {"ATTEMPTS", "attempts.#"}, {"ERROR", "error"}}
	// createdRec is a schedule as a create or an update answers it: an http action's new
	// signing secret is shown there, once.
	createdRec    = append(append([]col{}, scheduleRec...), col{"retry", "retry"}, col{"signing_secret", "signing_secret"})
	historyCols   = []col{{"AT", "at"}, {"KIND", "kind"}, {"BY", "by"}, {"DOOR", "door"}, {"NOTE", "note"}, {"CHANGES", "changes"}}
	bulkStateCols = []col{{"NAME", "name"}, {"OUTCOME", "outcome"}}
	eventFeedCols = []col{{"ID", "id"}, {"TOPIC", "topic"}, {"TYPE", "type"}, {"SCHEDULE", "aggregate_id"}, {"DATA", "data"}, {"AT", "created_at"}}
	secretRec     = []col{{"name", "name"}, {"signing_secret", "signing_secret"}, {"rotated_at", "rotated_at"}}
)

func scheduleCmd(a *app) *cobra.Command {
	return group("schedule", "Manage schedules: list, get, create, update, delete, pause, resume, trigger, reschedule, backfill, runs, history, events, rotate-secret",
		scheduleListCmd(a), scheduleGetCmd(a), scheduleCreateCmd(a), scheduleUpdateCmd(a), scheduleDeleteCmd(a),
		scheduleStateCmd(a, true), scheduleStateCmd(a, false), scheduleTriggerCmd(a), scheduleRescheduleCmd(a),
		scheduleBackfillCmd(a), scheduleRunsCmd(a), scheduleHistoryCmd(a), scheduleEventsCmd(a), scheduleRotateSecretCmd(a))
}

func scheduleListCmd(a *app) *cobra.Command {
	var lf *listFlags
	var selector, state, name string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List schedules by name, filtered by labels, state and name",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.list(lf, func(cursor *string, limit int) ([]byte, error) {
				p := client.ListSchedulesParams{Cursor: cursor, Limit: &limit}
				if selector != "" {
					p.Selector = &selector
				}
				if state != "" {
					s := client.ListSchedulesParamsState(state)
					p.State = &s
				}
				if name != "" {
					p.Name = &name
				}
				r, err := a.api.ListSchedulesWithResponse(a.ctx, &p)
				if err != nil {
					return nil, err
				}
				return r.Body, nil
			}, scheduleCols)
		},
	}
	lf = addListFlags(cmd)
	cmd.Flags().StringVar(&selector, "selector", "", `only schedules whose labels match ("team=billing,tier!=gold")`)
	cmd.Flags().StringVar(&state, "state", "", "only schedules in this state: active, paused or completed")
	cmd.Flags().StringVar(&name, "name", "", "only names holding this text")
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions([]string{"active", "paused", "completed"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func scheduleGetCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "get NAME",
		Short:             "A schedule with its next fire times, recent and running runs, counters",
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: a.completeSchedules,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := a.api.GetScheduleWithResponse(a.ctx, args[0])
			if err != nil {
				return err
			}
			return a.show(r.Body, scheduleRec)
		},
	}
}

func scheduleDeleteCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "delete NAME",
		Short:             "Delete a schedule",
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: a.completeSchedules,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := a.api.DeleteScheduleWithResponse(a.ctx, args[0])
			if err != nil {
				return err
			}
			return a.show(r.Body, scheduleRec)
		},
	}
}

func scheduleCreateCmd(a *app) *cobra.Command {
	var (
		file, text, cron, tz, interval, at, after, exclude, topic, typ, data string
		wfType, taskQueue, overlap, catchup, whenFull                        string
		paused                                                               bool
		maxConcurrent                                                        int
	)
	labels := labelFlags{}
	cmd := &cobra.Command{
		Use:   "create NAME (--cron EXPR [--timezone TZ] | --interval DUR | --at RFC3339) (--topic T --type Y | --workflow-type W --task-queue Q | --url URL) [flags] | -f FILE",
		Short: "Create a schedule from flags, or from a JSON body (-f FILE, --json TEXT)",
		Example: `  tickgate schedule create close-books --cron '0 2 * * *' --timezone Europe/Paris --topic billing --type close
  tickgate schedule create export --interval 1m --workflow-type Export --task-queue exports --overlap skip
  tickgate schedule create invoices-hook --cron '0 * * * *' --url https://billing.example.com/hooks/hourly --max-attempts 5
  tickgate schedule create -f schedule.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := a.jsonBody(file, text)
			if err != nil {
				return err
			}
			if body == nil {
				if len(args) != 1 {
					return usagef("schedule create: want NAME, got %d argument(s)", len(args))
				}
				spec := map[string]any{}
				for k, v := range map[string]string{"cron": cron, "interval": interval, "timezone": tz, "at": at} {
					if v != "" {
						spec[k] = v
					}
				}
				if exclude != "" {
					spec["exclude_calendars"] = strings.Split(exclude, ",")
				}
				action := map[string]any{"kind": "event", "topic": topic, "type": typ}
				httpAction, err := httpActionOf(cmd)
				if err != nil {
					return err
				}
				if httpAction != nil {
					action = httpAction
				} else if wfType != "" {
					action = map[string]any{"kind": "workflow", "workflow_type": wfType, "task_queue": taskQueue}
				} else if d, err := rawJSON("data", data); err != nil {
					return err
				} else if d != nil {
					action["data"] = d
				}
				req := map[string]any{"name": args[0], "spec": spec, "action": action, "paused": paused}
				if after != "" {
					req["after_completion"] = after
				}
				pol := map[string]any{}
				if overlap != "" {
					pol["overlap"] = overlap
				}
				if catchup != "" {
					pol["catchup_window"] = catchup
				}
				if maxConcurrent != 0 {
					pol["max_concurrent"] = maxConcurrent
				}
				if whenFull != "" {
					pol["overlap_when_full"] = whenFull
				}
				if len(pol) > 0 {
					req["policies"] = pol
				}
				if r := retryOf(cmd); r != nil {
					req["retry"] = r
				}
				if len(labels) > 0 {
					req["labels"] = map[string]string(labels)
				}
				if body, err = json.Marshal(req); err != nil {
					return err
				}
			}
			rd, _ := jsonReader(body)
			r, err := a.api.CreateScheduleWithBodyWithResponse(a.ctx, nil, "application/json", rd)
			if err != nil {
				return err
			}
			return a.show(r.Body, createdRec)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "request body from a JSON file (- for stdin)")
	f.StringVar(&text, "json", "", "request body as JSON text")
	f.StringVar(&cron, "cron", "", "cron expression")
	f.StringVar(&tz, "timezone", "", "IANA time zone of the cron expression")
	f.StringVar(&interval, "interval", "", "interval (Go duration, e.g. 90s)")
	f.StringVar(&at, "at", "", "a one-time schedule: its one fire (RFC 3339)")
	f.StringVar(&after, "after-completion", "", "a one-time schedule, once its run ended: keep (default) or delete")
	f.StringVar(&exclude, "exclude-calendars", "", "calendars whose days and ranges the schedule skips (comma-separated)")
	f.StringVar(&topic, "topic", "", "event action: topic")
	f.StringVar(&typ, "type", "", "event action: type")
	f.StringVar(&data, "data", "", "event action: data (JSON)")
	f.StringVar(&wfType, "workflow-type", "", "workflow action: workflow type")
	f.StringVar(&taskQueue, "task-queue", "", "workflow action: task queue")
	f.StringVar(&overlap, "overlap", "", "overlap policy")
	f.StringVar(&catchup, "catchup-window", "", "catch-up window (Go duration)")
	f.BoolVar(&paused, "paused", false, "create paused")
	f.IntVar(&maxConcurrent, "max-concurrent", 0, "at most this many runs in flight (overlap allow_all)")
	f.StringVar(&whenFull, "when-full", "", "a tick beyond --max-concurrent: buffer (default) or skip")
	f.Var(labels, "label", "a label key=value (repeatable)")
	addHTTPActionFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("overlap", cobra.FixedCompletions(overlaps, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("exclude-calendars", a.completeCalendarsFlag)
	return cmd
}

var overlaps = []string{"skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all"}

func scheduleUpdateCmd(a *app) *cobra.Command {
	var file, text string
	var version int64
	cmd := &cobra.Command{
		Use:               "update NAME (-f FILE | --json TEXT) [--version N]",
		Short:             "Change a schedule: the parts a JSON body gives ({spec?, action?, policies?, retry?, labels?, after_completion?, version?})",
		Example:           `  tickgate schedule update close-books --json '{"labels": {"team": "finance"}}' --version 3`,
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: a.completeSchedules,
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := a.jsonBody(file, text)
			if err != nil {
				return err
			}
			if body == nil {
				return usagef("schedule update: give the changes with -f FILE or --json TEXT")
			}
			if version != 0 {
				var m map[string]any
				if err := json.Unmarshal(body, &m); err != nil {
					return usagef("schedule update: the body is not a JSON object: %v", err)
				}
				m["version"] = version
				body, _ = json.Marshal(m)
			}
			rd, _ := jsonReader(body)
			r, err := a.api.UpdateScheduleWithBodyWithResponse(a.ctx, args[0], nil, "application/json", rd)
			if err != nil {
				return err
			}
			return a.show(r.Body, createdRec)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "request body from a JSON file (- for stdin)")
	cmd.Flags().StringVar(&text, "json", "", "request body as JSON text")
	cmd.Flags().Int64Var(&version, "version", 0, "the version the change expects (a stale one is refused, exit 4)")
	return cmd
}

// scheduleStateCmd pauses (or resumes) one schedule by name, or every schedule a --selector
// reaches (POST /schedules/pause), with a note for their history.
func scheduleStateCmd(a *app, pause bool) *cobra.Command {
	verb, short := "resume", "Resume a schedule, or every schedule a --selector reaches"
	if pause {
		verb, short = "pause", "Pause a schedule, or every schedule a --selector reaches"
	}
	var note, selector string
	cmd := &cobra.Command{
		Use:               verb + " (NAME | --selector SEL) [--note TEXT]",
		Short:             short,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: a.completeSchedules,
		RunE: func(cmd *cobra.Command, args []string) error {
			var n *string
			if note != "" {
				n = &note
			}
			if selector != "" {
				if len(args) != 0 {
					return usagef("schedule %s: no NAME with --selector", verb)
				}
				body := client.BulkStateRequest{Selector: selector, Note: n}
				var raw []byte
				if pause {
					r, err := a.api.PauseSelectedSchedulesWithResponse(a.ctx, nil, body)
					if err != nil {
						return err
					}
					raw = r.Body
				} else {
					r, err := a.api.ResumeSelectedSchedulesWithResponse(a.ctx, nil, body)
					if err != nil {
						return err
					}
					raw = r.Body
				}
				return a.showBulkState(raw)
			}
			if len(args) != 1 {
				return usagef("schedule %s: want NAME (or --selector SEL), got %d argument(s)", verb, len(args))
			}
			var raw []byte
			if pause {
				r, err := a.api.PauseScheduleWithResponse(a.ctx, args[0], client.PauseRequest{Note: n})
				if err != nil {
					return err
				}
				raw = r.Body
			} else {
				r, err := a.api.ResumeScheduleWithResponse(a.ctx, args[0], client.ResumeRequest{Note: n})
				if err != nil {
					return err
				}
				raw = r.Body
			}
			return a.show(raw, scheduleRec)
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "why (kept in the schedule's history)")
	cmd.Flags().StringVar(&selector, "selector", "", `every schedule whose labels match ("team=billing")`)
	return cmd
}

// showBulkState prints a bulk pause or resume: each schedule and its outcome, then the counts.
func (a *app) showBulkState(raw []byte) error {
	if a.output != "table" {
		return a.printRaw(raw)
	}
	var answer struct {
		Items     []map[string]any `json:"items"`
		Changed   int              `json:"changed"`
		Unchanged int              `json:"unchanged"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return err
	}
	table(a.env.Stdout, bulkStateCols, answer.Items)
	_, err := a.env.Stdout.Write([]byte(itoa(answer.Changed) + " changed, " + itoa(answer.Unchanged) + " unchanged\n"))
	return err
}

func scheduleTriggerCmd(a *app) *cobra.Command {
	var overlap, input string
	cmd := &cobra.Command{
		Use:               "trigger NAME [--overlap P] [--input JSON]",
		Short:             "Fire a schedule now",
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: a.completeSchedules,
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{}
			if overlap != "" {
				body["overlap"] = overlap
			}
			if input != "" {
				if !json.Valid([]byte(input)) {
					return usagef("schedule trigger: --input is not JSON")
				}
				body["input"] = json.RawMessage(input)
			}
			rd, _ := jsonReader(body)
			r, err := a.api.TriggerScheduleWithBodyWithResponse(a.ctx, args[0], nil, "application/json", rd)
			if err != nil {
				return err
			}
			return a.show(r.Body, []col{{"status", "status"}, {"reason", "reason"}, {"run", "run.id"}, {"scheduled_at", "run.scheduled_at"}, {"trigger", "run.trigger"}})
		},
	}
	cmd.Flags().StringVar(&overlap, "overlap", "", "override the overlap policy for this run")
	cmd.Flags().StringVar(&input, "input", "", "override a workflow action's input for this run (JSON)")
	_ = cmd.RegisterFlagCompletionFunc("overlap", cobra.FixedCompletions(overlaps, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func scheduleRescheduleCmd(a *app) *cobra.Command {
	var at string
	cmd := &cobra.Command{
		Use:               "reschedule NAME --at RFC3339",
		Short:             "Move a schedule's next fire",
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: a.completeSchedules,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Only what was given is sent: the API's rules (the same at every door) judge the rest.
			body := map[string]any{}
			if at != "" {
				body["next_run_at"] = at
			}
			rd, _ := jsonReader(body)
			r, err := a.api.RescheduleScheduleWithBodyWithResponse(a.ctx, args[0], "application/json", rd)
			if err != nil {
				return err
			}
			return a.show(r.Body, scheduleRec)
		},
	}
	cmd.Flags().StringVar(&at, "at", "", "the next fire time (RFC 3339)")
	return cmd
}

func scheduleBackfillCmd(a *app) *cobra.Command {
	var start, end, overlap string
	cmd := &cobra.Command{
		Use:               "backfill NAME --start RFC3339 --end RFC3339 [--overlap P]",
		Short:             "Run the ticks of a past time range",
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: a.completeSchedules,
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{}
			for k, v := range map[string]string{"start": start, "end": end, "overlap": overlap} {
				if v != "" {
					body[k] = v
				}
			}
			rd, _ := jsonReader(body)
			r, err := a.api.BackfillScheduleWithBodyWithResponse(a.ctx, args[0], "application/json", rd)
			if err != nil {
				return err
			}
			return a.show(r.Body, []col{{"ticks", "ticks"}})
		},
	}
	cmd.Flags().StringVar(&start, "start", "", "range start (RFC 3339)")
	cmd.Flags().StringVar(&end, "end", "", "range end (RFC 3339)")
	cmd.Flags().StringVar(&overlap, "overlap", "", "overlap policy for the backfilled runs")
	return cmd
}

func scheduleRunsCmd(a *app) *cobra.Command {
	var lf *listFlags
	cmd := &cobra.Command{
		Use:               "runs NAME",
		Short:             "A schedule's runs, newest first",
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: a.completeSchedules,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.list(lf, func(cursor *string, limit int) ([]byte, error) {
				r, err := a.api.ListScheduleRunsWithResponse(a.ctx, args[0], &client.ListScheduleRunsParams{Cursor: cursor, Limit: &limit})
				if err != nil {
					return nil, err
				}
				return r.Body, nil
			}, runCols)
		},
	}
	lf = addListFlags(cmd)
	return cmd
}

func scheduleHistoryCmd(a *app) *cobra.Command {
	var lf *listFlags
	cmd := &cobra.Command{
		Use:               "history NAME",
		Short:             "Who paused, resumed or edited a schedule, when and why, newest first",
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: a.completeSchedules,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.list(lf, func(cursor *string, limit int) ([]byte, error) {
				r, err := a.api.ListScheduleHistoryWithResponse(a.ctx, args[0], &client.ListScheduleHistoryParams{Cursor: cursor, Limit: &limit})
				if err != nil {
					return nil, err
				}
				return r.Body, nil
			}, historyCols)
		},
	}
	lf = addListFlags(cmd)
	return cmd
}

func scheduleEventsCmd(a *app) *cobra.Command {
	var lf *listFlags
	var topic string
	var after string
	cmd := &cobra.Command{
		Use:   "events [--topic T] [--after ID|CURSOR|now]",
		Short: "The outbox feed of the events schedules appended, in position order",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if lf.cursor != "" {
				// A cursor the feed handed out, or an event id: both go back as ?after=.
				after, lf.cursor = lf.cursor, ""
			}
			return a.list(lf, func(cursor *string, limit int) ([]byte, error) {
				p := client.ListEventsParams{Limit: &limit}
				if topic != "" {
					p.Topic = &topic
				}
				if cursor != nil {
					p.After = cursor
				} else if after != "" {
					p.After = &after
				}
				r, err := a.api.ListEventsWithResponse(a.ctx, &p)
				if err != nil {
					return nil, err
				}
				return r.Body, nil
			}, eventFeedCols)
		},
	}
	lf = addListFlags(cmd)
	cmd.Flags().StringVar(&topic, "topic", "", "only this topic")
	cmd.Flags().StringVar(&after, "after", "", "events after this event id, cursor, or now (the end)")
	return cmd
}

func scheduleRotateSecretCmd(a *app) *cobra.Command {
	var grace string
	cmd := &cobra.Command{
		Use:               "rotate-secret NAME [--grace 24h]",
		Short:             "A new signing secret for an http action, shown once (with --grace, the old one signs too until then)",
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: a.completeSchedules,
		RunE: func(cmd *cobra.Command, args []string) error {
			var body client.RotateSecretRequest
			if grace != "" {
				g := client.Duration(grace)
				body.Grace = &g
			}
			r, err := a.api.RotateScheduleSecretWithResponse(a.ctx, args[0], nil, body)
			if err != nil {
				return err
			}
			return a.show(r.Body, secretRec)
		},
	}
	cmd.Flags().StringVar(&grace, "grace", "", "how long the old secret keeps signing beside the new one (a duration up to 168h)")
	return cmd
}
