package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/dev/devstack"
	"github.com/tickgate/tickgate/internal/testing/schemadump"
	"github.com/tickgate/tickgate/internal/testing/testenv"
)

// TestSchemaFileIsCurrent: store/schema.sql is what the migrations build today — a fresh
// database migrated to the latest version, dumped and normalised the way `make schema`
// writes it. A migration added without `make schema` fails here.
func TestSchemaFileIsCurrent(t *testing.T) {
	t.Parallel()
	got, err := schemadump.Dump(context.Background(), testenv.DatabaseURL(t))
	require.NoError(t, err)
	root, err := devstack.RepoRoot()
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join(root, schemadump.Path))
	require.NoError(t, err, "store/schema.sql is missing: run make schema")
	if got == string(want) {
		return
	}
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(gotLines), len(wantLines)); i++ {
		var g, w string
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if g != w {
			t.Fatalf("store/schema.sql is stale (run make schema): line %d is\n  %q\nthe migrations build\n  %q", i+1, w, g)
		}
	}
}

// Normalize leaves no noise of the machine or the pg_dump release: version comments, SET
// lines, set_config and the \restrict guards go, the schema stays.
func TestSchemaNormalizeDropsNoise(t *testing.T) {
	t.Parallel()
	raw := "--\n-- PostgreSQL database dump\n--\n\\restrict abc123\n\n-- Dumped from database version 15.18\n" +
		"SET statement_timeout = 0;\nSELECT pg_catalog.set_config('search_path', '', false);\n\n\n\n" +
		"--\n-- Name: t; Type: TABLE; Schema: public; Owner: -\n--\n\nCREATE TABLE public.t (\n    id bigint NOT NULL\n);  \n\n\\unrestrict abc123\n"
	got := schemadump.Normalize(raw)
	require.True(t, strings.HasSuffix(got, "\nCREATE TABLE public.t (\n    id bigint NOT NULL\n);\n"), "%q", got)
	for _, noise := range []string{"Dumped from", "SET statement_timeout", "set_config", "restrict", "Owner:", "\n\n\n"} {
		require.NotContains(t, got, noise)
	}
}
