// Package archtest holds tickgate's import rules — which package may import which — and
// the checker that enforces them on the source tree. The rules and their reasons are
// explained in docs/architecture.md; this package is the part that fails the build. There
// are two kinds: Rules, each forbidding a set of imports to a part of the tree for a stated
// reason, and Layers, the "may import" column of docs/architecture.md's package table, which
// every package must keep to (layers.go; a test keeps the column and Layers equal).
//
// Only direct imports of non-test Go files count: a test may reach into any package it
// needs, and a package is answerable for what it imports, not for what its imports import
// (workflows imports activities for the activity handles, and activities imports store).
package archtest

import (
	"bufio"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Rule forbids the packages under From (but not under Unless) to import anything under
// Forbid (but not under Allow). Every path is a full import path; "under" includes the path
// itself and the packages below it, so "github.com/jackc/pgx" covers pgx/v5/pgxpool and
// "os" covers os/exec.
type Rule struct {
	Name   string
	From   string
	Unless []string
	Forbid []string
	Allow  []string
	Why    string
}

// Violation is one forbidden import.
type Violation struct {
	File    string // relative to the tree's root, slash-separated
	Line    int
	Package string // import path of the importing package
	Import  string
	Rule    string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s:%d: %s imports %s (rule %q)", v.File, v.Line, v.Package, v.Import, v.Rule)
}

// Report is the outcome of one check.
type Report struct {
	// Files counts the non-test Go files read per package import path, so that a caller can
	// tell a clean tree from a tree that was not read.
	Files      map[string]int
	Violations []Violation
}

// ioPackages are the imports that do I/O or drive a service: what the shared vocabulary
// (domain) must stay free of, so that deterministic workflow code can use it.
var ioPackages = []string{
	// standard library
	"os", "net", "database/sql", "syscall", "io/ioutil",
	// PostgreSQL, migrations
	"github.com/jackc/pgx", "github.com/pressly/goose",
	// Temporal clients and workers
	"go.temporal.io/sdk/client", "go.temporal.io/sdk/worker", "go.temporal.io/sdk/activity",
	"go.temporal.io/api/workflowservice", "go.temporal.io/api/operatorservice",
	"google.golang.org/grpc",
	// HTTP and metrics
	"github.com/labstack/echo", "github.com/prometheus",
}

// Rules are tickgate's import rules for the module at modulePath.
func Rules(modulePath string) []Rule {
	m := func(rel string) string { return modulePath + "/" + rel }
	tooling := []string{m("internal/dev"), m("internal/testing")}
	return []Rule{
		{
			Name: "workflows do no I/O",
			From: m("workflows"),
			Forbid: []string{
				m("store"), m("api"), m("metrics"), "github.com/jackc/pgx",
				"net/http", "os", "database/sql", "go.temporal.io/sdk/client",
			},
			Why: "workflow code is replayed and must be deterministic: it reaches PostgreSQL, the " +
				"network, files, the environment, other workflows' clients and metrics only through " +
				"activities (or the workflow SDK's own calls), and takes its vocabulary from domain",
		},
		{
			Name:   "api does not import activities",
			From:   m("api"),
			Forbid: []string{m("activities")},
			Why: "activities are the worker's side of the engines; what the API process runs of an " +
				"engine (a device result, a slot refill, advancing the active device task) is a store " +
				"transaction, and what it asks of a workflow goes through starter",
		},
		{
			Name:   "store knows no engine and no HTTP",
			From:   m("store"),
			Forbid: []string{m("workflows"), m("api")},
			Why:    "store is the only SQL and sits beneath the engines and the API, never above them",
		},
		{
			Name:   "domain does no I/O",
			From:   m("domain"),
			Forbid: append([]string{modulePath}, ioPackages...),
			// net/url parses an http executor's URL and never dials.
			Allow: []string{m("domain"), m("internal/schedulespec"), m("internal/version"), "net/url"},
			Why: "the vocabulary is shared by workflows, activities, store and api: it must be " +
				"safe in deterministic code and import nothing that talks to the outside",
		},
		{
			Name:   "the product does not depend on tooling",
			From:   modulePath,
			Unless: append([]string{m("cmd"), m("bench"), m("e2e"), m("tools")}, tooling...),
			Forbid: tooling,
			Why: "the dev stack, chaos run and test harness help build and prove tickgate; only " +
				"the binary's entry point (its dev, chaos and agent-sim subcommands), bench/ and " +
				"e2e/ may reach them",
		},
	}
}

// under reports whether importPath is prefix or a package below it.
func under(importPath, prefix string) bool {
	return importPath == prefix || strings.HasPrefix(importPath, prefix+"/")
}

func underAny(importPath string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return under(importPath, p) })
}

// applies reports whether r covers the import of imp by the package pkg.
func (r Rule) applies(pkg, imp string) bool {
	return under(pkg, r.From) && !underAny(pkg, r.Unless) &&
		underAny(imp, r.Forbid) && !underAny(imp, r.Allow)
}

// ModulePath reads the module path from root/go.mod.
func ModulePath(root string) (string, error) {
	f, err := os.Open(filepath.Join(root, "go.mod")) // #nosec G304 -- the repository's own go.mod
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s/go.mod: no module line", root)
}

// Policy is what Check enforces: the rules, and the layers every package keeps to.
type Policy struct {
	Rules  []Rule
	Layers []Layer
}

// Tickgate is tickgate's policy for the module at modulePath.
func Tickgate(modulePath string) Policy {
	return Policy{Rules: Rules(modulePath), Layers: Layers()}
}

// Check parses the imports of every non-test Go file of the module rooted at root (whose
// import path is modulePath) and reports each import a rule forbids and each import its
// package's layer does not allow (an import a rule already reported is not reported twice).
// Directories the go command ignores (testdata, names starting with "." or "_") and nested
// modules are skipped.
func Check(root, modulePath string, p Policy) (Report, error) {
	rep := Report{Files: map[string]int{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			name := d.Name()
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own (tools/*)
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		pkg := modulePath
		if dir := filepath.ToSlash(filepath.Dir(rel)); dir != "." {
			pkg = modulePath + "/" + dir
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rep.Files[pkg]++
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: bad import %s: %w", rel, spec.Path.Value, err)
			}
			line := fset.Position(spec.Pos()).Line
			ruled := false
			for _, r := range p.Rules {
				if r.applies(pkg, imp) {
					ruled = true
					rep.Violations = append(rep.Violations, Violation{File: rel, Line: line, Package: pkg, Import: imp, Rule: r.Name})
				}
			}
			if ruled || p.Layers == nil {
				continue
			}
			if why := layerVerdict(p.Layers, modulePath, pkg, imp); why != "" {
				rep.Violations = append(rep.Violations, Violation{File: rel, Line: line, Package: pkg, Import: imp, Rule: why})
			}
		}
		return nil
	})
	if err != nil {
		return Report{}, fmt.Errorf("check imports under %s: %w", root, err)
	}
	if len(rep.Files) == 0 {
		return Report{}, errors.New("check imports: no Go file found under " + root)
	}
	return rep, nil
}
