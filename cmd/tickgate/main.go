// Command tickgate is the single binary: `tickgate dev|worker|api|migrate|…` and the CLI's
// commands (package cli), in one cobra tree.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand; each lives in its own cmd_*.go file and adds itself in init.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string) error) {
	commands[name] = command{summary: summary, run: run}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runCommandLine(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
