package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra/doc"
)

// WriteReference writes the CLI's reference pages into dir: one Markdown page per command
// (tickgate.md, tickgate_schedule.md, tickgate_schedule_create.md, …), generated from the
// commands themselves (docs/cli/, `make generate-cli-docs`). Pages of commands that no
// longer exist are removed.
func WriteReference(dir string) error {
	root := NewRoot(context.Background(), Env{Getenv: func(string) string { return "" }})
	if err := os.MkdirAll(dir, 0o755); err != nil { // #nosec G301 -- docs/cli, pages of the repository
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, "tickgate*.md"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	prepend := func(string) string {
		return "<!-- Generated from the commands in cli/ by `make generate-cli-docs`; do not edit. -->\n\n"
	}
	link := func(name string) string { return name }
	if err := doc.GenMarkdownTreeCustom(root, dir, prepend, link); err != nil {
		return fmt.Errorf("cli reference: %w", err)
	}
	return nil
}
