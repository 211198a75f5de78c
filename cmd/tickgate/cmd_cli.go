package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tickgate/tickgate/cli"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/dev/devstack"
	"github.com/tickgate/tickgate/store"
)

func init() {
	for group, summary := range cli.Groups {
		register(group, summary, func(ctx context.Context, args []string) error {
			err := cli.Run(ctx, group, args, cliEnv())
			if err != nil {
				// Exit codes a script can rely on (cli.Exit*): 3 not found, 4 conflict,
				// 5 unauthorised, 6 invalid, 7 unavailable, 8 watched work failed.
				fmt.Fprintf(os.Stderr, "tickgate %s: %v\n", group, err)
				os.Exit(cli.ExitCode(err))
			}
			return nil
		})
	}
}

func cliEnv() cli.Env {
	tty := false
	if fi, err := os.Stdout.Stat(); err == nil {
		tty = fi.Mode()&os.ModeCharDevice != 0
	}
	return cli.Env{
		Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, TTY: tty,
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
	b, err := os.ReadFile(filepath.Join(root, ".dev", "admin-token"))
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
	if b, err := os.ReadFile(path); err == nil {
		if row, err := st.Authenticate(ctx, strings.TrimSpace(string(b))); err == nil && row.Role == store.RoleAdmin {
			token = strings.TrimSpace(string(b))
		}
	}
	if token == "" {
		_, token, err = st.CreateToken(ctx, store.NewToken{Role: store.RoleAdmin, Note: "make dev"})
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
