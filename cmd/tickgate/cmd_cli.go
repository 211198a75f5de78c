package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickgate/tickgate/cli"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/dev/devstack"
	"github.com/tickgate/tickgate/store"
)

// runCommandLine runs `tickgate <args…>`: the CLI's commands (package cli, on cobra) with
// the binary's own (worker, api, dev, …) beside them in one tree, so help and shell
// completion know them all. It answers the process's exit code.
func runCommandLine(ctx context.Context, args []string) int {
	err := cli.Execute(ctx, args, cliEnv(), serverCommands()...)
	if err == nil {
		return 0
	}
	// Exit codes a script can rely on (cli.Exit*): 2 usage, 3 not found, 4 conflict,
	// 5 unauthorised, 6 invalid, 7 unavailable, 8 watched work failed; 1 anything else.
	fmt.Fprintf(os.Stderr, "tickgate: %v\n", err)
	return cli.ExitCode(err)
}

// serverCommands are the registered commands as cobra commands that parse their own flags.
func serverCommands() []*cobra.Command {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*cobra.Command
	for _, name := range names {
		c := commands[name]
		out = append(out, &cobra.Command{
			Use:                name,
			Short:              c.summary,
			DisableFlagParsing: true,
			// No API client: these run the stack, they do not call it.
			PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
			RunE: func(cmd *cobra.Command, args []string) error {
				err := c.run(cmd.Context(), args)
				if errors.Is(err, flag.ErrHelp) {
					return &cli.UsageError{Msg: name + ": see the flags above"}
				}
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				return nil
			},
		})
	}
	return out
}

func cliEnv() cli.Env {
	tty := false
	if fi, err := os.Stdout.Stat(); err == nil {
		tty = fi.Mode()&os.ModeCharDevice != 0
	}
	return cli.Env{
		Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin, Getenv: os.Getenv, TTY: tty,
		DefaultToken:    devAdminToken,
		CreateTokenInDB: createTokenInDB,
	}
}

// devAdminToken is make dev's admin token, used when no token is given.
func devAdminToken() string {
	root, err := devstack.RepoRoot()
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(root, ".dev", "admin-token")) // #nosec G304 -- the dev stack's .dev/admin-token
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// createTokenInDB makes a token straight in the database (applying migrations first), the
// bootstrap for the first admin token.
func createTokenInDB(ctx context.Context, databaseURL, role, pc, note string) (int64, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := store.Migrate(ctx, databaseURL); err != nil {
		return 0, "", err
	}
	st, err := store.Open(ctx, databaseURL)
	if err != nil {
		return 0, "", err
	}
	defer st.Close()
	row, token, err := st.CreateToken(ctx, store.NewToken{Role: domain.TokenRole(role), PC: pc, Note: note})
	if err != nil {
		return 0, "", err
	}
	return row.ID, token, nil
}

// writeDevAdminToken makes sure .dev/admin-token holds a working admin token for the dev
// database (reusing the one there when it still authenticates) and prints it.
func writeDevAdminToken(ctx context.Context, databaseURL, devDir string) error {
	path := filepath.Join(devDir, "admin-token")
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := store.Migrate(ctx, databaseURL); err != nil {
		return err
	}
	st, err := store.Open(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer st.Close()
	token := ""
	if b, err := os.ReadFile(path); err == nil { // #nosec G304 -- the dev stack's .dev/admin-token
		if row, err := st.Authenticate(ctx, strings.TrimSpace(string(b))); err == nil && row.Role == domain.RoleAdmin {
			token = strings.TrimSpace(string(b))
		}
	}
	if token == "" {
		_, token, err = st.CreateToken(ctx, store.NewToken{Role: domain.RoleAdmin, Note: "make dev"})
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	fmt.Printf("admin API token (also in %s; the tickgate CLI picks it up):\n  %s\n", path, token)
	return nil
}
