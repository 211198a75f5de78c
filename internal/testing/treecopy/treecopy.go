// Package treecopy copies a directory tree, for tests that need a checkout of their own to
// change or to run from.
package treecopy

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Copy copies the regular files under from to the same paths under to, with their
// permission bits. skip, given a path relative to from (slash-separated) and its entry,
// leaves that file out, or that directory with everything below it.
func Copy(from, to string, skip func(rel string, d fs.DirEntry) bool) error {
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		if rel != "." && skip(filepath.ToSlash(rel), d) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755) // #nosec G301 -- copies a test's fixture tree, modes as in the repository
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path) // #nosec G122 G304 -- copies a test's fixture tree, which nothing else changes meanwhile
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, info.Mode().Perm()) // #nosec G703 -- copies a test's fixture tree into the test's own directory
	})
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", from, to, err)
	}
	return nil
}
