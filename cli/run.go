package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Env is what a command may touch: its output streams, the environment and the clock.
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// TTY draws watch progress in place (\r) instead of one line per change.
	TTY bool
	// Token is used when neither --token nor TICKGATE_TOKEN is given (make dev's
	// .dev/admin-token, say).
	DefaultToken func() string
	// CreateTokenInDB makes a token straight in the database (bootstrap of the first admin).
	CreateTokenInDB func(ctx context.Context, databaseURL, role, pc, note string) (id int64, token string, err error)
}

// Groups are the command groups, each a `tickgate <group> <op>` family.
var Groups = map[string]string{
	"schedule": "manage schedules: list, get, create, update, delete, pause, resume, trigger, reschedule, backfill, runs, history, events, rotate-secret",
	"calendar": "manage the calendars schedules exclude: list, get, create, update, delete",
	"rollout":  "manage rollouts: list, get, create, tasks, pause, resume, cancel, watch",
	"task-run": "act on a rollout's task run: get, retry, skip, cancel, result",
	"task":     "manage device tasks: list, get, create, cancel, devices, watch, execution, events, ack, report",
	"pc":       "manage PCs: list, get, create, claim",
	"device":   "manage devices: list, get, create, set-status",
	"token":    "manage API tokens: list, create, revoke",
}

// cmd is one parsed invocation.
type cmd struct {
	env    Env
	fs     *flag.FlagSet
	client *Client
	output string
	args   []string
	ctx    context.Context
}

type op struct {
	usage string
	flags func(fs *flag.FlagSet) func(c *cmd) error
}

// Run runs `tickgate <group> <args…>`.
func Run(ctx context.Context, group string, args []string, env Env) error {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	ops := operations[group]
	if ops == nil {
		return usagef("unknown command %q", group)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		groupUsage(env.Stderr, group, ops)
		return usagef("%s: an operation is required", group)
	}
	o, ok := ops[args[0]]
	if !ok {
		groupUsage(env.Stderr, group, ops)
		return usagef("%s: unknown operation %q", group, args[0])
	}
	fs := flag.NewFlagSet("tickgate "+group+" "+args[0], flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	server := env.Getenv("TICKGATE_SERVER")
	if server == "" {
		server = "http://127.0.0.1:8080"
	}
	c := &cmd{env: env, fs: fs, ctx: ctx, client: &Client{}}
	fs.StringVar(&c.client.Server, "server", server, "API base URL (TICKGATE_SERVER)")
	fs.StringVar(&c.client.Token, "token", env.Getenv("TICKGATE_TOKEN"), "API token (TICKGATE_TOKEN)")
	fs.StringVar(&c.output, "o", "table", "output: table or json")
	run := o.flags(fs)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "usage: tickgate %s %s %s\n", group, args[0], o.usage)
		fs.PrintDefaults()
	}
	rest, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return usagef("%v", err)
	}
	c.args = rest
	if c.output != "table" && c.output != "json" {
		return usagef("-o must be table or json, got %q", c.output)
	}
	if c.client.Token == "" && env.DefaultToken != nil {
		c.client.Token = env.DefaultToken()
	}
	c.client.Server = strings.TrimSuffix(strings.TrimSuffix(c.client.Server, "/"), "/api/v1")
	return run(c)
}

func groupUsage(w io.Writer, group string, ops map[string]op) {
	if w == nil {
		return
	}
	names := make([]string, 0, len(ops))
	for n := range ops {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "usage: tickgate %s <operation> [flags]\n\noperations:\n", group)
	for _, n := range names {
		fmt.Fprintf(w, "  %s %s\n", n, ops[n].usage)
	}
	fmt.Fprintln(w, "\ncommon flags: --server URL (TICKGATE_SERVER), --token T (TICKGATE_TOKEN), -o table|json")
}

// parseInterspersed lets flags come after positional arguments (`get foo -o json`).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// want checks the number of positional arguments.
func (c *cmd) want(n int, names string) error {
	if len(c.args) != n {
		return usagef("%s: want %s, got %d argument(s)", c.fs.Name(), names, len(c.args))
	}
	return nil
}

func esc(s string) string { return url.PathEscape(s) }

// show prints one object: its JSON, or FIELD VALUE lines.
func (c *cmd) show(raw json.RawMessage, fields []col) error {
	if c.output == "json" {
		return c.printJSON(raw)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	record(c.env.Stdout, fields, obj)
	return nil
}

func (c *cmd) printJSON(raw json.RawMessage) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		_, err = c.env.Stdout.Write(append(raw, '\n'))
		return err
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	_, err := fmt.Fprintf(c.env.Stdout, "%s\n", b)
	return err
}

// call sends a request and prints the object it answers.
func (c *cmd) call(method, path string, body any, fields []col) error {
	var raw json.RawMessage
	if err := c.client.Do(c.ctx, method, path, body, &raw); err != nil {
		return err
	}
	if len(raw) == 0 {
		return nil
	}
	return c.show(raw, fields)
}

// listFlags are the pagination flags of a list operation.
type listFlags struct {
	limit  int
	cursor string
	all    bool
}

func addListFlags(fs *flag.FlagSet) *listFlags {
	l := &listFlags{}
	fs.IntVar(&l.limit, "limit", 50, "items per page (1-500)")
	fs.StringVar(&l.cursor, "cursor", "", "start at this next_cursor")
	fs.BoolVar(&l.all, "all", false, "follow next_cursor to the last page")
	return l
}

// list fetches one page (or all with --all) and prints a table or {"items", "next_cursor"}.
func (c *cmd) list(path string, query url.Values, l *listFlags, cols []col) error {
	if query == nil {
		query = url.Values{}
	}
	query.Set("limit", strconv.Itoa(l.limit))
	cursor := l.cursor
	var items []json.RawMessage
	next := ""
	for {
		if cursor != "" {
			// The events feed's next_cursor is the last event id, sent back as ?after=.
			if strings.HasPrefix(path, "/api/v1/events") {
				query.Set("after", cursor)
			} else {
				query.Set("cursor", cursor)
			}
		}
		var page struct {
			Items      []json.RawMessage `json:"items"`
			NextCursor string            `json:"next_cursor"`
		}
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		if err := c.client.Do(c.ctx, "GET", path+sep+query.Encode(), nil, &page); err != nil {
			return err
		}
		items = append(items, page.Items...)
		next = page.NextCursor
		if !l.all || next == "" {
			break
		}
		cursor = next
	}
	if items == nil {
		items = []json.RawMessage{}
	}
	if c.output == "json" {
		b, _ := json.Marshal(map[string]any{"items": items, "next_cursor": next})
		return c.printJSON(b)
	}
	objs := make([]map[string]any, 0, len(items))
	for _, it := range items {
		var m map[string]any
		if err := json.Unmarshal(it, &m); err != nil {
			return fmt.Errorf("decode answer: %w", err)
		}
		objs = append(objs, m)
	}
	table(c.env.Stdout, cols, objs)
	if next != "" && c.env.Stderr != nil {
		fmt.Fprintf(c.env.Stderr, "more: --cursor %s (or --all)\n", next)
	}
	return nil
}

// jsonBody reads a request body from -f FILE ("-" is stdin) or --json TEXT.
func jsonBody(file, text string) (json.RawMessage, error) {
	switch {
	case file != "" && text != "":
		return nil, usagef("give -f or --json, not both")
	case file == "-":
		b, err := io.ReadAll(os.Stdin)
		return b, err
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, usagef("read %s: %v", file, err)
		}
		return b, nil
	case text != "":
		return json.RawMessage(text), nil
	}
	return nil, nil
}

// rawJSON parses a flag holding JSON.
func rawJSON(name, v string) (json.RawMessage, error) {
	if v == "" {
		return nil, nil
	}
	if !json.Valid([]byte(v)) {
		return nil, usagef("--%s is not valid JSON: %s", name, v)
	}
	return json.RawMessage(v), nil
}

var errWatchDone = errors.New("done")

// watch polls fetch every interval and draws its progress until it reports done.
func (c *cmd) watch(interval time.Duration, fetch func() (line string, done bool, failed string, err error)) error {
	last := ""
	for {
		line, done, failed, err := fetch()
		if err != nil {
			if c.env.TTY {
				fmt.Fprintln(c.env.Stdout)
			}
			return err
		}
		if c.env.TTY {
			fmt.Fprintf(c.env.Stdout, "\r\033[K%s", line)
		} else if line != last {
			fmt.Fprintln(c.env.Stdout, line)
		}
		last = line
		if done {
			if c.env.TTY {
				fmt.Fprintln(c.env.Stdout)
			}
			if failed != "" {
				return &FailedError{Msg: failed}
			}
			return nil
		}
		select {
		case <-c.ctx.Done():
			if c.env.TTY {
				fmt.Fprintln(c.env.Stdout)
			}
			return c.ctx.Err()
		case <-time.After(interval):
		}
	}
}
