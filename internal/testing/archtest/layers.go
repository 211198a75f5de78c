package archtest

import (
	"slices"
	"strings"
)

// Layer is one row of the package table in docs/architecture.md: what the packages under
// Path may import directly. The standard library is always allowed (the Rules forbid the
// parts of it a package must not use); a tickgate package only when MayImport lists it (or
// it lies under Path itself); anything else only when ThirdParty lists a prefix of it.
type Layer struct {
	// Path is relative to the module. The layer covers the package and those below it,
	// except where a layer with a longer Path takes over.
	Path string
	// MayImport are the tickgate packages (relative to the module, with the packages
	// below them) the layer may import: the table's "may import" column.
	MayImport []string
	// ThirdParty are the import path prefixes of other modules the layer may import (the
	// column names them in words).
	ThirdParty []string
	// Anything lifts every limit: tooling and the binary's entry point.
	Anything bool
}

// Third-party modules, by the words the table uses for them.
var (
	temporalWorkflowSDK = []string{"go.temporal.io/sdk/workflow", "go.temporal.io/sdk/temporal"}
	temporalClient      = []string{"go.temporal.io/sdk/client", "go.temporal.io/sdk/temporal", "go.temporal.io/api"}
	pgx                 = []string{"github.com/jackc/pgx"}
	prometheus          = []string{"github.com/prometheus/client_golang"}
	otelAPI             = []string{"go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel/codes", "go.opentelemetry.io/otel/trace"}
)

// Layers are the rows of docs/architecture.md's package table. TestLayersMatchTheDocs
// keeps the two equal: change both together.
func Layers() []Layer {
	return []Layer{
		{Path: "domain", MayImport: []string{"internal/schedulespec", "internal/version"}},
		{
			Path:       "workflows",
			MayImport:  []string{"domain", "activities", "internal/schedulespec", "internal/scheduleplan"},
			ThirdParty: temporalWorkflowSDK,
		},
		{
			Path:       "activities",
			MayImport:  []string{"domain", "store", "metrics", "internal/schedulespec", "internal/scheduleplan", "internal/telemetry", "internal/outbound"},
			ThirdParty: slices.Concat(temporalClient, []string{"go.temporal.io/sdk/activity"}, pgx, otelAPI),
		},
		{
			Path:       "worker",
			MayImport:  []string{"workflows", "activities", "starter", "store", "internal/config", "internal/telemetry"},
			ThirdParty: slices.Concat([]string{"go.temporal.io/sdk", "go.temporal.io/api"}, otelAPI),
		},
		{Path: "starter", MayImport: []string{"workflows", "domain"}, ThirdParty: temporalClient},
		{
			Path: "api",
			MayImport: []string{"starter", "store", "deviceengine", "domain", "metrics", "web", "internal/readiness",
				"internal/schedulespec", "internal/scheduleplan", "internal/telemetry", "internal/version", "internal/outbound", "workflows"},
			ThirdParty: slices.Concat([]string{"github.com/labstack/echo"}, prometheus, temporalClient, otelAPI),
		},
		{
			Path:       "deviceengine",
			MayImport:  []string{"store", "starter", "domain", "workflows", "internal/telemetry"},
			ThirdParty: otelAPI,
		},
		{
			Path:       "store",
			MayImport:  []string{"domain", "migrations", "internal/readiness", "internal/schedulespec", "internal/scheduleplan"},
			ThirdParty: slices.Concat(pgx, []string{"github.com/pressly/goose"}),
		},
		{Path: "migrations"},
		{Path: "metrics", MayImport: []string{"store"}, ThirdParty: slices.Concat(prometheus, []string{"go.temporal.io/sdk/client"})},
		{Path: "cli", MayImport: []string{"client"}, ThirdParty: []string{"github.com/spf13/cobra", "github.com/spf13/pflag", "go.yaml.in/yaml/v3"}},
		{Path: "client", ThirdParty: []string{"github.com/oapi-codegen/runtime", "go.yaml.in/yaml/v3"}},
		{Path: "web"},
		{
			Path:       "internal/config",
			MayImport:  []string{"domain", "internal/readiness", "internal/outbound", "metrics"},
			ThirdParty: []string{"go.temporal.io/sdk/client", "go.temporal.io/sdk/log"},
		},
		{Path: "internal/readiness", ThirdParty: slices.Concat(pgx, []string{"go.temporal.io/sdk/client"})},
		{Path: "internal/schedulespec", ThirdParty: []string{"github.com/robfig/cron"}},
		{Path: "internal/scheduleplan", MayImport: []string{"domain", "internal/schedulespec"}},
		{
			Path: "internal/telemetry",
			ThirdParty: slices.Concat([]string{"go.opentelemetry.io/otel", "go.opentelemetry.io/contrib", "go.temporal.io/sdk/contrib/opentelemetry",
				"go.temporal.io/sdk/interceptor", "github.com/exaring/otelpgx"}, pgx),
		},
		{Path: "internal/version"},
		{Path: "internal/outbound"},
		{Path: "cmd/tickgate", Anything: true},
		{Path: "internal/dev", Anything: true},
		{Path: "internal/testing", Anything: true},
		{Path: "bench", Anything: true},
		{Path: "e2e", Anything: true},
	}
}

// layerOf is the layer covering pkg (an import path in the module): the one with the
// longest Path that pkg lies under.
func layerOf(layers []Layer, modulePath, pkg string) (Layer, bool) {
	var best Layer
	found := false
	for _, l := range layers {
		if under(pkg, modulePath+"/"+l.Path) && (!found || len(l.Path) > len(best.Path)) {
			best, found = l, true
		}
	}
	return best, found
}

// layerVerdict names why pkg may not import imp under layers, or returns "" when it may.
func layerVerdict(layers []Layer, modulePath, pkg, imp string) string {
	l, ok := layerOf(layers, modulePath, pkg)
	rel := strings.TrimPrefix(pkg, modulePath+"/")
	switch {
	case !ok:
		return "layers: " + rel + " has no row in docs/architecture.md's package table"
	case l.Anything, isStandard(imp), under(imp, modulePath+"/"+l.Path):
		return ""
	}
	if under(imp, modulePath) {
		for _, m := range l.MayImport {
			if under(imp, modulePath+"/"+m) {
				return ""
			}
		}
		return "layers: " + l.Path + " may import " + describe(l.MayImport, "no tickgate package")
	}
	if underAny(imp, l.ThirdParty) {
		return ""
	}
	return "layers: " + l.Path + " may import, outside the standard library and tickgate, " + describe(l.ThirdParty, "nothing")
}

func describe(xs []string, none string) string {
	if len(xs) == 0 {
		return none
	}
	return "only " + strings.Join(xs, ", ")
}

// isStandard reports whether imp is a standard library package: its first element has no dot.
func isStandard(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return !strings.Contains(first, ".")
}
