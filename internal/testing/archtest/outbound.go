package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The outbound check (docs/security.md "Outbound"): every HTTP request tickgate sends on a
// user's word goes through the one client constructor, internal/outbound's Rule.NewClient,
// which judges the address connected to, follows no redirect to a refused address and takes
// no proxy from the environment. Any other HTTP client or transport in the product could
// reach what the rule refuses, so the check reports each place a non-test file builds one —
// an http.Client or http.Transport literal, new(http.Client), a zero http.Client variable —
// or uses the default one (http.DefaultClient, http.DefaultTransport, http.Get and its
// kin), outside the exemptions, each of which says why it is not a door.

// OutboundExemption is a file or a folder (slash-separated, relative to the module's root)
// whose HTTP clients are not doors a user's word opens, and why.
type OutboundExemption struct {
	Path string
	Why  string
}

// OutboundExemptions are tickgate's.
var OutboundExemptions = []OutboundExemption{
	{"internal/outbound", "the one constructor itself"},
	{"cli", "the CLI talks to tickgate's own API, at the address its user runs it against"},
	{"client", "the Go client library talks to tickgate's own API, in its user's process, at the address its user gives it"},
	{"cmd/tickgate/httputil.go", "`tickgate dev` waits for the local stack's own health endpoints"},
	{"cmd/tickgate/cmd_agentsim.go", "`tickgate agent-sim` talks to tickgate's own API, as agents do"},
	{"internal/dev", "tooling: the local stack, the chaos run and the agent simulator call tickgate's own API and local servers"},
	{"internal/testing", "tooling: the test harness calls the API under test"},
	{"bench", "benchmark programs call the local stack they measure"},
	{"e2e", "end-to-end tests"},
}

// OutboundUse is an HTTP client or transport built, or the default one used, outside the
// outbound constructor.
type OutboundUse struct {
	File string // relative to the tree's root, slash-separated
	Line int
	What string
}

func (u OutboundUse) String() string { return fmt.Sprintf("%s:%d: %s", u.File, u.Line, u.What) }

// CheckOutbound reports every OutboundUse in the non-test Go files under root, outside the
// exemptions, and answers how many files it read. It skips what Check skips.
func CheckOutbound(root string, exempt []OutboundExemption) ([]OutboundUse, int, error) {
	var uses []OutboundUse
	files := 0
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
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || exempted(rel, exempt) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		for _, u := range outboundUses(f) {
			u.File, u.Line = rel, fset.Position(token.Pos(u.Line)).Line
			uses = append(uses, u)
		}
		return nil
	})
	return uses, files, err
}

// exempted reports whether the file rel lies under an exemption.
func exempted(rel string, exempt []OutboundExemption) bool {
	for _, e := range exempt {
		if rel == e.Path || strings.HasPrefix(rel, e.Path+"/") {
			return true
		}
	}
	return false
}

// outboundUses finds the uses in one file (Line holds the token.Pos until the caller
// resolves it).
func outboundUses(f *ast.File) []OutboundUse {
	httpNames := map[string]bool{} // the names net/http is imported under
	for _, spec := range f.Imports {
		if p, _ := strconv.Unquote(spec.Path.Value); p == "net/http" {
			name := "http"
			if spec.Name != nil {
				name = spec.Name.Name
			}
			httpNames[name] = name != "_"
		}
	}
	// is reports whether e is http.<one of names>.
	is := func(e ast.Expr, names ...string) (string, bool) {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return "", false
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || !httpNames[x.Name] {
			return "", false
		}
		for _, n := range names {
			if sel.Sel.Name == n {
				return "http." + n, true
			}
		}
		return "", false
	}
	var out []OutboundUse
	add := func(n ast.Node, what string) { out = append(out, OutboundUse{Line: int(n.Pos()), What: what}) }
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if name, ok := is(n.Type, "Client", "Transport"); ok {
				add(n, "builds an "+name+" outside internal/outbound: use outbound.Rule.NewClient")
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "new" && len(n.Args) == 1 {
				if name, ok := is(n.Args[0], "Client", "Transport"); ok {
					add(n, "builds a new("+name+") outside internal/outbound: use outbound.Rule.NewClient")
				}
			}
			if name, ok := is(n.Fun, "Get", "Post", "Head", "PostForm"); ok {
				add(n, "calls "+name+", which sends through http.DefaultClient: use outbound.Rule.NewClient")
			}
		case *ast.ValueSpec:
			if name, ok := is(n.Type, "Client", "Transport"); ok {
				add(n, "declares a zero "+name+", the default one: use outbound.Rule.NewClient")
			}
		case *ast.SelectorExpr:
			if name, ok := is(n, "DefaultClient", "DefaultTransport"); ok {
				add(n, "uses "+name+", which takes a proxy from the environment and checks no address: use outbound.Rule.NewClient")
			}
		}
		return true
	})
	return out
}
