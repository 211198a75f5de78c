package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

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
	createdRec  = append(append([]col{}, scheduleRec...), col{"retry", "retry"}, col{"signing_secret", "signing_secret"})
	rolloutCols = []col{{"ID", "id"}, {"NAME", "name"}, {"STATUS", "status"}, {"PARALLEL", "parallel_limit"}, {"DONE", "progress.finished"}, {"TOTAL", "progress.total"},
		{"WAVE", "wave.open"}, {"OF", "wave.count"}, {"REASON", "status_reason"}}
	rolloutRec = []col{{"id", "id"}, {"name", "name"}, {"status", "status"}, {"status_reason", "status_reason"}, {"parallel_limit", "parallel_limit"},
		{"progress", "progress"}, {"counts", "counts"}, {"wave", "wave"}, {"strategy", "strategy"}, {"frozen", "frozen"}, {"created_at", "created_at"}}
	taskRunCols = []col{{"ID", "id"}, {"DATABASE", "database"}, {"TYPE", "type"}, {"VERSION", "version"}, {"WAVE", "wave"}, {"STATUS", "status"}, {"WAITING", "waiting_cause"}, {"STARTED", "started_at"}, {"FINISHED", "finished_at"}}
	taskRunRec  = []col{{"id", "id"}, {"rollout_id", "rollout_id"}, {"database", "database"}, {"type", "type"}, {"version", "version"}, {"wave", "wave"}, {"status", "status"},
		{"waiting_cause", "waiting_cause"}, {"started_at", "started_at"}, {"finished_at", "finished_at"}, {"error", "error"}}
	taskCols = []col{{"ID", "id"}, {"STATUS", "status"}, {"TARGET", "target_count"}, {"COUNTS", "counts"}, {"CREATED", "created_at"}, {"FINISHED", "finished_at"}}
	taskRec  = []col{{"id", "id"}, {"status", "status"}, {"waiting_cause", "waiting_cause"}, {"payload", "payload"}, {"target_count", "target_count"}, {"rate", "rate"}, {"windows", "windows"},
		{"counts", "counts"}, {"error", "error"}, {"started_at", "started_at"}, {"finished_at", "finished_at"}}
	taskDevCols = []col{{"ID", "id"}, {"TASK", "task_id"}, {"DEVICE", "device"}, {"PC", "pc"}, {"STATUS", "status"}, {"ATTEMPT", "attempt"}, {"SENT", "sent_at"}}
	taskDevRec  = []col{{"id", "id"}, {"task_id", "task_id"}, {"device", "device"}, {"pc", "pc"}, {"status", "status"}, {"attempt", "attempt"},
		{"error", "error"}, {"sent_at", "sent_at"}, {"timeout_at", "timeout_at"}, {"completed_at", "completed_at"}}
	eventCols  = []col{{"ID", "id"}, {"ATTEMPT", "attempt"}, {"TYPE", "type"}, {"DETAIL", "detail"}, {"AT", "created_at"}}
	pcCols     = []col{{"NAME", "name"}, {"CAPACITY", "device_capacity"}, {"RUNNING", "slots.running"}, {"TARGET", "slots.target"}, {"ELIGIBLE", "slots.eligible"}}
	pcRec      = []col{{"name", "name"}, {"device_capacity", "device_capacity"}, {"slots", "slots"}, {"created_at", "created_at"}}
	deviceCols = []col{{"SERIAL", "serial"}, {"PC", "pc"}, {"STATUS", "status"}, {"ERROR", "error"}, {"UPDATED", "updated_at"}}
	deviceRec  = []col{{"serial", "serial"}, {"pc", "pc"}, {"status", "status"}, {"error", "error"}, {"updated_at", "updated_at"}}
	tokenCols  = []col{{"ID", "id"}, {"ROLE", "role"}, {"PC", "pc"}, {"PREFIX", "prefix"}, {"NOTE", "note"}, {"CREATED", "created_at"}, {"REVOKED", "revoked_at"}}
	tokenRec   = []col{{"id", "id"}, {"role", "role"}, {"pc", "pc"}, {"note", "note"}, {"token", "token"}}
)

// simple is an operation with n positional arguments mapped onto one request.
func simple(usage string, n int, method string, path func(args []string) string, fields []col) op {
	return op{usage: usage, flags: func(fs *flag.FlagSet) func(c *cmd) error {
		return func(c *cmd) error {
			if err := c.want(n, usage); err != nil {
				return err
			}
			var body any
			if method == "POST" {
				body = map[string]any{}
			}
			return c.call(method, path(c.args), body, fields)
		}
	}}
}

func listOp(usage, path string, cols []col) op {
	return op{usage: usage, flags: func(fs *flag.FlagSet) func(c *cmd) error {
		l := addListFlags(fs)
		return func(c *cmd) error {
			if err := c.want(0, "no arguments"); err != nil {
				return err
			}
			return c.list(path, nil, l, cols)
		}
	}}
}

var operations = map[string]map[string]op{
	"calendar": calendarOps,
	"schedule": {
		"list":    scheduleListOp(),
		"history": scheduleHistoryOp(),
		"get":     simple("NAME", 1, "GET", func(a []string) string { return "/api/v1/schedules/" + esc(a[0]) }, scheduleRec),
		"delete":  simple("NAME", 1, "DELETE", func(a []string) string { return "/api/v1/schedules/" + esc(a[0]) }, scheduleRec),
		"resume":  scheduleStateOp(false),
		"create": {usage: "NAME (--cron EXPR [--timezone TZ] | --interval DUR | --at RFC3339 [--after-completion keep|delete]) [--exclude-calendars C,…] (--topic T --type Y [--data JSON] | --workflow-type W --task-queue Q | --url URL [--method M] [--header K=V]… [--body JSON] [--http-timeout DUR]) [--max-attempts N] [--max-age DUR] [--initial-backoff DUR] [--max-backoff DUR] [--overlap P] [--max-concurrent N [--when-full buffer|skip]] [--catchup-window DUR] [--label K=V]... [--paused] | -f FILE",
			flags: func(fs *flag.FlagSet) func(c *cmd) error {
				file := fs.String("f", "", "request body from a JSON file (- for stdin)")
				text := fs.String("json", "", "request body as JSON text")
				cron := fs.String("cron", "", "cron expression")
				tz := fs.String("timezone", "", "IANA time zone of the cron expression")
				interval := fs.String("interval", "", "interval (Go duration, e.g. 90s)")
				at := fs.String("at", "", "a one-time schedule: its one fire (RFC 3339)")
				after := fs.String("after-completion", "", "a one-time schedule, once its run ended: keep (default) or delete")
				exclude := fs.String("exclude-calendars", "", "calendars whose days and ranges the schedule skips (comma-separated)")
				topic := fs.String("topic", "", "event action: topic")
				typ := fs.String("type", "", "event action: type")
				data := fs.String("data", "", "event action: data (JSON)")
				wfType := fs.String("workflow-type", "", "workflow action: workflow type")
				taskQueue := fs.String("task-queue", "", "workflow action: task queue")
				overlap := fs.String("overlap", "", "overlap policy")
				catchup := fs.String("catchup-window", "", "catch-up window (Go duration)")
				paused := fs.Bool("paused", false, "create paused")
				hooks := addHTTPActionFlags(fs)
				maxConcurrent := fs.Int("max-concurrent", 0, "at most this many runs in flight (overlap allow_all)")
				whenFull := fs.String("when-full", "", "a tick beyond --max-concurrent: buffer (default) or skip")
				labels := labelFlags{}
				fs.Var(labels, "label", "a label key=value (repeatable)")
				return func(c *cmd) error {
					body, err := jsonBody(*file, *text)
					if err != nil {
						return err
					}
					if body == nil {
						if err := c.want(1, "NAME"); err != nil {
							return err
						}
						spec := map[string]any{}
						if *cron != "" {
							spec["cron"] = *cron
						}
						if *interval != "" {
							spec["interval"] = *interval
						}
						if *tz != "" {
							spec["timezone"] = *tz
						}
						if *at != "" {
							spec["at"] = *at
						}
						if *exclude != "" {
							spec["exclude_calendars"] = strings.Split(*exclude, ",")
						}
						action := map[string]any{"kind": "event", "topic": *topic, "type": *typ}
						httpAction, err := hooks.action()
						if err != nil {
							return err
						}
						if httpAction != nil {
							action = httpAction
						} else if *wfType != "" {
							action = map[string]any{"kind": "workflow", "workflow_type": *wfType, "task_queue": *taskQueue}
						} else if d, err := rawJSON("data", *data); err != nil {
							return err
						} else if d != nil {
							action["data"] = d
						}
						req := map[string]any{"name": c.args[0], "spec": spec, "action": action, "paused": *paused}
						if *after != "" {
							req["after_completion"] = *after
						}
						pol := map[string]any{}
						if *overlap != "" {
							pol["overlap"] = *overlap
						}
						if *catchup != "" {
							pol["catchup_window"] = *catchup
						}
						if *maxConcurrent != 0 {
							pol["max_concurrent"] = *maxConcurrent
						}
						if *whenFull != "" {
							pol["overlap_when_full"] = *whenFull
						}
						if len(pol) > 0 {
							req["policies"] = pol
						}
						if r := hooks.retry(); r != nil {
							req["retry"] = r
						}
						if len(labels) > 0 {
							req["labels"] = map[string]string(labels)
						}
						return c.call("POST", "/api/v1/schedules", req, createdRec)
					}
					return c.call("POST", "/api/v1/schedules", body, createdRec)
				}
			}},
		"pause": scheduleStateOp(true),
		"trigger": {usage: "NAME [--overlap P] [--input JSON]", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			overlap := fs.String("overlap", "", "override the overlap policy for this run")
			input := fs.String("input", "", "override a workflow action's input for this run (JSON)")
			return func(c *cmd) error {
				if err := c.want(1, "NAME"); err != nil {
					return err
				}
				body := map[string]any{}
				if *overlap != "" {
					body["overlap"] = *overlap
				}
				if *input != "" {
					if !json.Valid([]byte(*input)) {
						return usagef("schedule trigger: --input is not JSON")
					}
					body["input"] = json.RawMessage(*input)
				}
				return c.call("POST", "/api/v1/schedules/"+esc(c.args[0])+"/trigger", body, runCols)
			}
		}},
		"update": {usage: "NAME (-f FILE | --json TEXT)   ({spec?, action?, policies?, retry?, after_completion?, version?}) [--version N]", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			file := fs.String("f", "", "request body from a JSON file (- for stdin)")
			text := fs.String("json", "", "request body as JSON text")
			version := fs.Int64("version", 0, "expected version (sent as If-Match semantics in the body)")
			return func(c *cmd) error {
				if err := c.want(1, "NAME"); err != nil {
					return err
				}
				body, err := jsonBody(*file, *text)
				if err != nil {
					return err
				}
				if body == nil {
					return usagef("schedule update: give the changes with -f FILE or --json TEXT")
				}
				if *version != 0 {
					var m map[string]any
					if err := json.Unmarshal(body, &m); err != nil {
						return usagef("schedule update: the body is not a JSON object: %v", err)
					}
					m["version"] = *version
					body, _ = json.Marshal(m)
				}
				return c.call("PATCH", "/api/v1/schedules/"+esc(c.args[0]), body, createdRec)
			}
		}},
		"reschedule": {usage: "NAME --at RFC3339", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			at := fs.String("at", "", "the next fire time (RFC 3339)")
			return func(c *cmd) error {
				if err := c.want(1, "NAME"); err != nil {
					return err
				}
				// Only what was given is sent: the API's rules (the same at every door) judge the rest.
				body := map[string]any{}
				if *at != "" {
					body["next_run_at"] = *at
				}
				return c.call("POST", "/api/v1/schedules/"+esc(c.args[0])+"/reschedule", body, scheduleRec)
			}
		}},
		"backfill": {usage: "NAME --start RFC3339 --end RFC3339 [--overlap P]", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			start := fs.String("start", "", "range start (RFC 3339)")
			end := fs.String("end", "", "range end (RFC 3339)")
			overlap := fs.String("overlap", "", "overlap policy for the backfilled runs")
			return func(c *cmd) error {
				if err := c.want(1, "NAME"); err != nil {
					return err
				}
				body := map[string]any{}
				if *start != "" {
					body["start"] = *start
				}
				if *end != "" {
					body["end"] = *end
				}
				if *overlap != "" {
					body["overlap"] = *overlap
				}
				return c.call("POST", "/api/v1/schedules/"+esc(c.args[0])+"/backfill", body, []col{{"ticks", "ticks"}})
			}
		}},
		"events": {usage: "[--topic T] [--after ID] [--limit N] [--all]   (the outbox feed)", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			l := addListFlags(fs)
			topic := fs.String("topic", "", "only this topic")
			after := fs.String("after", "", "events after this id")
			return func(c *cmd) error {
				if err := c.want(0, "no arguments"); err != nil {
					return err
				}
				q := url.Values{}
				if *topic != "" {
					q.Set("topic", *topic)
				}
				if *after != "" {
					q.Set("after", *after)
				}
				return c.list("/api/v1/events", q, l, []col{{"ID", "id"}, {"TOPIC", "topic"}, {"TYPE", "type"}, {"SCHEDULE", "aggregate_id"}, {"DATA", "data"}, {"AT", "created_at"}})
			}
		}},
		"runs": {usage: "NAME [--limit N] [--all]", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			l := addListFlags(fs)
			return func(c *cmd) error {
				if err := c.want(1, "NAME"); err != nil {
					return err
				}
				return c.list("/api/v1/schedules/"+esc(c.args[0])+"/runs", nil, l, runCols)
			}
		}},
	},
	"rollout": {
		"list":   listOp("[--limit N] [--all]", "/api/v1/rollouts", rolloutCols),
		"get":    simple("ID", 1, "GET", func(a []string) string { return "/api/v1/rollouts/" + esc(a[0]) }, rolloutRec),
		"pause":  simple("ID", 1, "POST", func(a []string) string { return "/api/v1/rollouts/" + esc(a[0]) + "/pause" }, rolloutRec),
		"resume": simple("ID", 1, "POST", func(a []string) string { return "/api/v1/rollouts/" + esc(a[0]) + "/resume" }, rolloutRec),
		"cancel": simple("ID", 1, "POST", func(a []string) string { return "/api/v1/rollouts/" + esc(a[0]) + "/cancel" }, rolloutRec),
		"create": {usage: "-f FILE | --json TEXT   ({name, parallel_limit, tasks:[…], strategy?:{waves, bake, health, abort, rate, windows}})", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			file := fs.String("f", "", "request body from a JSON file (- for stdin)")
			text := fs.String("json", "", "request body as JSON text")
			return func(c *cmd) error {
				body, err := jsonBody(*file, *text)
				if err != nil {
					return err
				}
				if body == nil {
					return usagef("rollout create: give the rollout with -f FILE or --json TEXT")
				}
				return c.call("POST", "/api/v1/rollouts", body, rolloutRec)
			}
		}},
		"tasks": {usage: "ID [--status S] [--limit N] [--all]", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			l := addListFlags(fs)
			status := fs.String("status", "", "only tasks with this status")
			return func(c *cmd) error {
				if err := c.want(1, "ID"); err != nil {
					return err
				}
				q := url.Values{}
				if *status != "" {
					q.Set("status", *status)
				}
				return c.list("/api/v1/rollouts/"+esc(c.args[0])+"/tasks", q, l, taskRunCols)
			}
		}},
		"watch": {usage: "ID [--interval DUR]", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			interval := fs.Duration("interval", time.Second, "poll interval")
			return func(c *cmd) error {
				if err := c.want(1, "ID"); err != nil {
					return err
				}
				return c.watch(*interval, func() (string, bool, string, error) {
					var r struct {
						Name     string           `json:"name"`
						Status   string           `json:"status"`
						Counts   map[string]int64 `json:"counts"`
						Progress struct {
							Total    int64 `json:"total"`
							Finished int64 `json:"finished"`
						} `json:"progress"`
					}
					if err := c.client.Do(c.ctx, "GET", "/api/v1/rollouts/"+esc(c.args[0]), nil, &r); err != nil {
						return "", false, "", err
					}
					line := fmt.Sprintf("%s %s %d/%d %s %s", r.Name, progressBar(r.Progress.Finished, r.Progress.Total, 30),
						r.Progress.Finished, r.Progress.Total, r.Status, counts(r.Counts))
					// The server's status is the one definition of how a rollout ended
					// (docs/rollouts.md); the counts are only shown, never judged here.
					done, failed := false, ""
					switch r.Status {
					case "DONE":
						done = true
					case "FAILED", "CANCELED":
						done, failed = true, fmt.Sprintf("rollout %s ended %s", c.args[0], r.Status)
					}
					return line, done, failed, nil
				})
			}
		}},
	},
	"task-run": {
		"get":    simple("ID", 1, "GET", func(a []string) string { return "/api/v1/task-runs/" + esc(a[0]) }, taskRunRec),
		"retry":  simple("ID", 1, "POST", func(a []string) string { return "/api/v1/task-runs/" + esc(a[0]) + "/retry" }, taskRunRec),
		"skip":   simple("ID", 1, "POST", func(a []string) string { return "/api/v1/task-runs/" + esc(a[0]) + "/skip" }, taskRunRec),
		"cancel": simple("ID", 1, "POST", func(a []string) string { return "/api/v1/task-runs/" + esc(a[0]) + "/cancel" }, taskRunRec),
		"result": {usage: "ID --status DONE|FAILED [--error TEXT] [--output JSON]", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			status := fs.String("status", "", "DONE or FAILED")
			errText := fs.String("error", "", "error message")
			output := fs.String("output", "", "output (JSON)")
			return func(c *cmd) error {
				if err := c.want(1, "ID"); err != nil {
					return err
				}
				body := map[string]any{"status": *status}
				if *errText != "" {
					body["error"] = *errText
				}
				if o, err := rawJSON("output", *output); err != nil {
					return err
				} else if o != nil {
					body["output"] = o
				}
				return c.call("POST", "/api/v1/task-runs/"+esc(c.args[0])+"/result", body, taskRunRec)
			}
		}},
	},
	"task": {
		"list":      listOp("[--limit N] [--all]", "/api/v1/tasks", taskCols),
		"get":       simple("ID", 1, "GET", func(a []string) string { return "/api/v1/tasks/" + esc(a[0]) }, taskRec),
		"cancel":    simple("ID", 1, "POST", func(a []string) string { return "/api/v1/tasks/" + esc(a[0]) + "/cancel" }, taskRec),
		"execution": simple("TASK_DEVICE_ID", 1, "GET", func(a []string) string { return "/api/v1/task-devices/" + esc(a[0]) }, taskDevRec),
		"ack": {usage: "TASK_DEVICE_ID [--attempt N]   (as the PC's agent)", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			attempt := fs.Int("attempt", 0, "the attempt being acknowledged")
			return func(c *cmd) error {
				if err := c.want(1, "TASK_DEVICE_ID"); err != nil {
					return err
				}
				body := map[string]any{}
				if *attempt > 0 {
					body["attempt"] = *attempt
				}
				return c.call("POST", "/api/v1/agent/task-devices/"+esc(c.args[0])+"/ack", body, taskDevRec)
			}
		}},
		"report": {usage: "TASK_DEVICE_ID --status succeeded|failed [--error TEXT] [--retryable=false] [--attempt N]   (as the PC's agent)", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			status := fs.String("status", "", "succeeded or failed")
			errText := fs.String("error", "", "error message")
			retryable := fs.Bool("retryable", true, "false: the command cannot work on this device (straight to FAILED_FINAL)")
			attempt := fs.Int("attempt", 0, "the attempt being reported")
			return func(c *cmd) error {
				if err := c.want(1, "TASK_DEVICE_ID"); err != nil {
					return err
				}
				body := map[string]any{"status": *status}
				if *errText != "" {
					body["error"] = *errText
				}
				if !*retryable {
					body["retryable"] = false
				}
				if *attempt > 0 {
					body["attempt"] = *attempt
				}
				return c.call("POST", "/api/v1/agent/task-devices/"+esc(c.args[0])+"/result", body, taskDevRec)
			}
		}},
		"events":  {usage: "TASK_DEVICE_ID", flags: listArgOp(1, func(a []string) string { return "/api/v1/task-devices/" + esc(a[0]) + "/events" }, eventCols)},
		"devices": {usage: "ID [--limit N] [--all]", flags: listArgOp(1, func(a []string) string { return "/api/v1/tasks/" + esc(a[0]) + "/devices" }, taskDevCols)},
		"create": {usage: "[--payload JSON] [--target-count N] [--rate N] [--window 'CRON|DURATION[|TZ]']… | -f FILE   (rate, windows: docs/progressive.md)", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			file := fs.String("f", "", "request body from a JSON file (- for stdin)")
			payload := fs.String("payload", "{}", "the command's payload (JSON)")
			target := fs.Int("target-count", 0, "run on this many devices (default: every eligible one)")
			rate := fs.Int("rate", 0, "at most this many executions sent per minute across the farm")
			var windows windowFlags
			fs.Var(&windows, "window", `a window executions are sent in: "CRON|DURATION" or "CRON|DURATION|TIMEZONE" (repeatable)`)
			return func(c *cmd) error {
				body, err := jsonBody(*file, "")
				if err != nil {
					return err
				}
				if body != nil {
					return c.call("POST", "/api/v1/tasks", body, taskRec)
				}
				p, err := rawJSON("payload", *payload)
				if err != nil {
					return err
				}
				req := map[string]any{"payload": p}
				if *target > 0 {
					req["target_count"] = *target
				}
				if *rate != 0 {
					req["rate"] = map[string]any{"per_minute": *rate}
				}
				if len(windows) > 0 {
					req["windows"] = windows
				}
				return c.call("POST", "/api/v1/tasks", req, taskRec)
			}
		}},
		"watch": {usage: "ID [--interval DUR]", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			interval := fs.Duration("interval", time.Second, "poll interval")
			return func(c *cmd) error {
				if err := c.want(1, "ID"); err != nil {
					return err
				}
				return c.watch(*interval, func() (string, bool, string, error) {
					var t struct {
						Status string           `json:"status"`
						Counts map[string]int64 `json:"counts"`
					}
					if err := c.client.Do(c.ctx, "GET", "/api/v1/tasks/"+esc(c.args[0]), nil, &t); err != nil {
						return "", false, "", err
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
					line := fmt.Sprintf("task %s %s %d/%d %s %s", c.args[0], progressBar(finished, total, 30), finished, total, t.Status, counts(t.Counts))
					done := t.Status == "success" || t.Status == "failed" || t.Status == "canceled"
					failed := ""
					if t.Status == "failed" || t.Status == "canceled" {
						failed = fmt.Sprintf("task %s ended %s", c.args[0], t.Status)
					}
					return line, done, failed, nil
				})
			}
		}},
	},
	"pc": {
		"list": listOp("[--limit N] [--all]", "/api/v1/pcs", pcCols),
		"claim": {usage: "NAME [--max N]   (as the PC's agent: take its pending commands, marking them SENT)", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			maxN := fs.Int("max", 0, "at most this many commands")
			return func(c *cmd) error {
				if err := c.want(1, "NAME"); err != nil {
					return err
				}
				body := map[string]any{}
				if *maxN > 0 {
					body["max"] = *maxN
				}
				var raw json.RawMessage
				if err := c.client.Do(c.ctx, "POST", "/api/v1/agent/pcs/"+esc(c.args[0])+"/claim", body, &raw); err != nil {
					return err
				}
				if c.output == "json" {
					return c.printJSON(raw)
				}
				var page struct {
					Items []map[string]any `json:"items"`
				}
				if err := json.Unmarshal(raw, &page); err != nil {
					return fmt.Errorf("decode answer: %w", err)
				}
				table(c.env.Stdout, append(taskDevCols, col{"PAYLOAD", "payload"}), page.Items)
				return nil
			}
		}},
		"get": simple("NAME", 1, "GET", func(a []string) string { return "/api/v1/pcs/" + esc(a[0]) }, pcRec),
		"create": {usage: "NAME [--capacity N]", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			capacity := fs.Int("capacity", 0, "device slots (default 20)")
			return func(c *cmd) error {
				if err := c.want(1, "NAME"); err != nil {
					return err
				}
				req := map[string]any{"name": c.args[0]}
				if *capacity != 0 {
					req["device_capacity"] = *capacity
				}
				return c.call("POST", "/api/v1/pcs", req, pcRec)
			}
		}},
	},
	"device": {
		"list": listOp("[--limit N] [--all]", "/api/v1/devices", deviceCols),
		"get":  simple("SERIAL", 1, "GET", func(a []string) string { return "/api/v1/devices/" + esc(a[0]) }, deviceRec),
		"create": {usage: "SERIAL --pc PC", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			pc := fs.String("pc", "", "the PC the device is attached to")
			return func(c *cmd) error {
				if err := c.want(1, "SERIAL"); err != nil {
					return err
				}
				return c.call("POST", "/api/v1/devices", map[string]any{"pc": *pc, "serial": c.args[0]}, deviceRec)
			}
		}},
		"set-status": {usage: "SERIAL STATUS   (online|offline; online resets a device in error)", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			return func(c *cmd) error {
				if err := c.want(2, "SERIAL STATUS"); err != nil {
					return err
				}
				return c.call("PATCH", "/api/v1/devices/"+esc(c.args[0]), map[string]any{"status": c.args[1]}, deviceRec)
			}
		}},
	},
	"token": {
		"list":   listOp("[--limit N] [--all]", "/api/v1/tokens", tokenCols),
		"revoke": simple("ID", 1, "DELETE", func(a []string) string { return "/api/v1/tokens/" + esc(a[0]) }, tokenCols),
		"create": {usage: "--role admin|deployer|operator|viewer|agent [--pc PC] [--note TEXT] [--database-url URL] [-q]", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			role := fs.String("role", "", "admin, deployer, operator, viewer or agent")
			pc := fs.String("pc", "", "the PC an agent token is bound to")
			note := fs.String("note", "", "what the token is for")
			quiet := fs.Bool("q", false, "print only the token (for TOKEN=$(tickgate token create … -q))")
			dbURL := fs.String("database-url", "", "create the token straight in this database (DATABASE_URL when no API token is set): the way to make the first admin token")
			return func(c *cmd) error {
				if err := c.want(0, "no arguments"); err != nil {
					return err
				}
				direct := *dbURL
				if direct == "" && c.client.Token == "" {
					direct = c.env.Getenv("DATABASE_URL")
				}
				switch *role {
				case "admin", "deployer", "operator", "viewer", "agent":
				default:
					return usagef("--role must be admin, deployer, operator, viewer or agent, got %q", *role)
				}
				if direct != "" {
					if c.env.CreateTokenInDB == nil {
						return usagef("creating a token in the database is not available here")
					}
					id, token, err := c.env.CreateTokenInDB(c.ctx, direct, *role, *pc, *note)
					if err != nil {
						return err
					}
					if *quiet {
						_, err := fmt.Fprintln(c.env.Stdout, token)
						return err
					}
					b, _ := json.Marshal(map[string]any{"id": id, "role": *role, "pc": *pc, "note": *note, "token": token})
					return c.show(b, tokenRec)
				}
				req := map[string]any{"role": *role}
				if *pc != "" {
					req["pc"] = *pc
				}
				if *note != "" {
					req["note"] = *note
				}
				if *quiet {
					var created struct {
						Token string `json:"token"`
					}
					if err := c.client.Do(c.ctx, "POST", "/api/v1/tokens", req, &created); err != nil {
						return err
					}
					_, err := fmt.Fprintln(c.env.Stdout, created.Token)
					return err
				}
				return c.call("POST", "/api/v1/tokens", req, tokenRec)
			}
		}},
	},
}

func listArgOp(n int, path func([]string) string, cols []col) func(fs *flag.FlagSet) func(c *cmd) error {
	return func(fs *flag.FlagSet) func(c *cmd) error {
		l := addListFlags(fs)
		return func(c *cmd) error {
			if err := c.want(n, strconv.Itoa(n)+" argument(s)"); err != nil {
				return err
			}
			return c.list(path(c.args), nil, l, cols)
		}
	}
}

// counts prints a status→count map in a stable order, zeroes left out.
func counts(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v != 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}
