// Package cli is tickgate's command-line client, built on cobra as the temporal CLI, kubectl
// and gh are: `tickgate <resource> <verb> …` (schedule, calendar, rollout, task-run, task,
// pc, device, token, run, freeze), `tickgate apply` and `tickgate export` (schedules as
// code, docs/gitops.md), and `tickgate completion bash|zsh|fish`. Every command talks to
// the HTTP API through the typed client (package client) with --server and a token from
// --token or TICKGATE_TOKEN, prints a table by default or the API's answer with -o json or
// -o yaml, and exits with codes a shell script can rely on (ExitCode). One file holds each
// resource's commands; docs/cli/ holds their reference pages, generated from them.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tickgate/tickgate/client"
)

// Env is what a command may touch: its streams, the environment and the clock.
type Env struct {
	Stdout, Stderr io.Writer
	// Stdin is read by -f - (os.Stdin when nil).
	Stdin  io.Reader
	Getenv func(string) string
	// TTY draws watch progress in place (\r) instead of one line per change.
	TTY bool
	// Token is used when neither --token nor TICKGATE_TOKEN is given (make dev's
	// .dev/admin-token, say).
	DefaultToken func() string
	// CreateTokenInDB makes a token straight in the database (bootstrap of the first admin).
	CreateTokenInDB func(ctx context.Context, databaseURL, role, pc, note string) (id int64, token string, err error)
}

// app is one invocation: its environment, its global flags and the API client they make.
type app struct {
	env    Env
	ctx    context.Context
	server string
	token  string
	output string
	api    *client.Client
}

// Run runs `tickgate <group> <args…>` (the form the tests and older callers use).
func Run(ctx context.Context, group string, args []string, env Env) error {
	return Execute(ctx, append([]string{group}, args...), env)
}

// Execute runs the command line args (without the program's name) and answers its error;
// ExitCode maps that error to the process's exit code. The extra commands join the tree
// (the binary's server commands: worker, api, dev, …).
func Execute(ctx context.Context, args []string, env Env, extra ...*cobra.Command) error {
	root := NewRoot(ctx, env)
	root.AddCommand(extra...)
	root.SetArgs(normalizeLongFlags(root, args))
	_, err := root.ExecuteC()
	if err != nil && cobraRefusal(err) {
		err = &UsageError{Msg: err.Error()}
	}
	return err
}

// cobraRefusal reports whether err is cobra's own refusal of a command line (an unknown
// command or flag, a wrong number of arguments): a usage error, exit 2.
func cobraRefusal(err error) bool {
	var ue *UsageError
	if errors.As(err, &ue) {
		return false
	}
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "invalid argument", "flag needs an argument"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// NewRoot is the `tickgate` command with the CLI's commands under it.
func NewRoot(ctx context.Context, env Env) *cobra.Command {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	if env.Stdin == nil {
		env.Stdin = os.Stdin
	}
	a := &app{env: env, ctx: ctx}
	root := &cobra.Command{
		Use:   "tickgate",
		Short: "Durable schedules, gated rollouts and device dispatch",
		Long: "tickgate's command-line client: each command calls the HTTP API (--server, default " +
			"http://127.0.0.1:8080 or TICKGATE_SERVER) with a token (--token or TICKGATE_TOKEN). " +
			"Exit codes: 0 ok, 1 error, 2 bad command line, 3 not found, 4 conflict, 5 unauthorised, " +
			"6 invalid, 7 unavailable, 8 watched work failed.",
		SilenceErrors:     true,
		SilenceUsage:      true,
		DisableAutoGenTag: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return a.connect() },
		RunE: func(cmd *cobra.Command, _ []string) error {
			_ = cmd.Usage()
			return usagef("a command is required")
		},
	}
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetIn(env.Stdin)
	root.SetContext(ctx)
	server := env.Getenv("TICKGATE_SERVER")
	if server == "" {
		server = "http://127.0.0.1:8080"
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.server, "server", server, "API base URL (TICKGATE_SERVER)")
	pf.StringVar(&a.token, "token", env.Getenv("TICKGATE_TOKEN"), "API token (TICKGATE_TOKEN)")
	pf.StringVarP(&a.output, "output", "o", "table", "output: table, json or yaml")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{Msg: err.Error()} })
	root.CompletionOptions.HiddenDefaultCmd = false

	root.AddCommand(scheduleCmd(a), calendarCmd(a), rolloutCmd(a), taskRunCmd(a), taskCmd(a), pcCmd(a), deviceCmd(a),
		tokenCmd(a), runCmd(a), freezeCmd(a), applyCmd(a), exportCmd(a))
	// `tickgate completion bash|zsh|fish|powershell`, made now rather than at Execute so the
	// reference pages list it too.
	root.InitDefaultCompletionCmd()
	return root
}

// connect checks the global flags and makes the API client.
func (a *app) connect() error {
	switch a.output {
	case "table", "json", "yaml":
	default:
		return usagef("-o must be table, json or yaml, got %q", a.output)
	}
	if a.token == "" && a.env.DefaultToken != nil {
		a.token = a.env.DefaultToken()
	}
	c, err := client.New(a.server, client.WithToken(a.token), client.WithRetries(3, 250*time.Millisecond),
		client.WithUserAgent("tickgate-cli"))
	if err != nil {
		return usagef("bad --server %q: %v", a.server, err)
	}
	a.api = c
	return nil
}

// group is a resource's command: it runs nothing itself, and an unknown verb is a usage
// error (exit 2) rather than cobra's help with exit 0.
func group(use, short string, verbs ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_ = cmd.Usage()
			if len(args) > 0 {
				return usagef("%s: unknown operation %q", cmd.Name(), args[0])
			}
			return usagef("%s: an operation is required", cmd.Name())
		},
	}
	g.AddCommand(verbs...)
	return g
}

// exactArgs is cobra.ExactArgs as a usage error naming the arguments wanted.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			if names == "" {
				names = "no arguments"
			}
			return usagef("%s: want %s, got %d argument(s)", cmd.CommandPath(), names, len(args))
		}
		return nil
	}
}

// normalizeLongFlags lets a long flag be written with one dash (`-limit 5`, `-f` stays the
// shorthand), as the CLI accepted before it moved to cobra: a single-dash word that names a
// long flag of the tree becomes `--word`.
func normalizeLongFlags(root *cobra.Command, args []string) []string {
	long := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.LocalFlags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { long[f.Name] = true })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	out := make([]string, len(args))
	for i, arg := range args {
		out[i] = arg
		if arg == "--" {
			copy(out[i:], args[i:])
			break
		}
		if !strings.HasPrefix(arg, "-") || strings.HasPrefix(arg, "--") || len(arg) < 3 {
			continue
		}
		name, _, _ := strings.Cut(arg[1:], "=")
		if long[name] {
			out[i] = "-" + arg
		}
	}
	return out
}

// sortedKeys lists a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Exit codes.
const (
	ExitOK          = 0
	ExitError       = 1 // anything else
	ExitUsage       = 2 // bad command line
	ExitNotFound    = 3 // 404
	ExitConflict    = 4 // 409, 412, 422: the state does not allow it (apply: a conflict)
	ExitAuth        = 5 // 401, 403
	ExitInvalid     = 6 // 400, 413, 415: the request was refused as invalid
	ExitUnavailable = 7 // 5xx, 429, or the server cannot be reached
	ExitFailed      = 8 // watch: the rollout or task finished unsuccessfully
)

// UsageError is a bad command line.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error { return &UsageError{Msg: fmt.Sprintf(format, args...)} }

// FailedError is a watched rollout or task that ended unsuccessfully.
type FailedError struct{ Msg string }

func (e *FailedError) Error() string { return e.Msg }

// ConflictError is an apply that left names alone because another set (or no set) owns them.
type ConflictError struct{ Names []string }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%d conflict(s), left alone: %s", len(e.Names), strings.Join(e.Names, ", "))
}

// ExitCode maps an error from Run or Execute to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var (
		ue *UsageError
		fe *FailedError
		ce *ConflictError
		me *ManifestError
		ae *client.Error
		te *client.TransportError
	)
	switch {
	case errors.As(err, &ue):
		return ExitUsage
	case errors.As(err, &me):
		return ExitInvalid
	case errors.As(err, &fe):
		return ExitFailed
	case errors.As(err, &ce):
		return ExitConflict
	case errors.As(err, &te):
		return ExitUnavailable
	case errors.As(err, &ae):
		switch {
		case ae.Status == 404:
			return ExitNotFound
		case ae.Status == 409 || ae.Status == 412 || ae.Status == 422:
			return ExitConflict
		case ae.Status == 401 || ae.Status == 403:
			return ExitAuth
		case ae.Status >= 500 || ae.Status == 429:
			return ExitUnavailable
		case ae.Status >= 400:
			return ExitInvalid
		}
	}
	return ExitError
}
