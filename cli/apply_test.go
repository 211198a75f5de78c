package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/cli"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

const billingYAML = `kind: Calendar
name: holidays
timezone: Europe/Berlin
dates: ["2026-12-25", "2026-12-24"]
---
kind: Schedule
name: nightly-report
labels: {team: billing}
spec: {cron: "0 3 * * *", timezone: Europe/Berlin, exclude_calendars: [holidays]}
action: {kind: event, topic: reports, type: report.due}
policies: {overlap: skip, catchup_window: 6h}
`

const billingJSON = `{"kind": "Schedule", "name": "hourly-sync", "spec": {"interval": "1h"}, "action": {"kind": "event", "topic": "sync", "type": "tick"}}
{"kind": "Schedule", "name": "close-books", "spec": {"cron": "0 2 1 * *"}, "action": {"kind": "event", "topic": "billing", "type": "close"}, "paused": true}
`

// report runs apply -o json and reads its report.
func report(t *testing.T, st *teststack.Stack, args ...string) (map[string]any, result) {
	t.Helper()
	r := run(t, st, st.AdminToken, append(append([]string{"apply"}, args...), "-o", "json")...)
	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.out), &rep), "%s %s", r.out, r.errOut)
	return rep, r
}

func summary(rep map[string]any) map[string]float64 {
	out := map[string]float64{}
	for k, v := range rep["summary"].(map[string]any) {
		out[k] = v.(float64)
	}
	return out
}

func versions(t *testing.T, st *teststack.Stack) map[string]any {
	t.Helper()
	r := run(t, st, st.AdminToken, "schedule", "list", "--all", "-o", "json")
	require.Equal(t, 0, r.code, r.errOut)
	var page struct {
		Items []map[string]any `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.out), &page))
	out := map[string]any{}
	for _, s := range page.Items {
		out[s["name"].(string)] = []any{s["version"], s["labels"], s["paused"]}
	}
	return out
}

// TestApplyPlansCreatesLeavesUnchangedAndPrunes: apply of a directory (YAML and JSON, several
// documents a file) plans without changing anything on --dry-run, creates what is missing
// labelled with its set, changes nothing the second time, updates field by field, reports a
// name another set or no set owns as a conflict and leaves it alone (--adopt takes over one
// no set owns), and prunes only its own set's schedules the files no longer hold.
func TestApplyPlansCreatesLeavesUnchangedAndPrunes(t *testing.T) {
	t.Parallel()
	// With a worker: an update tells the schedule's workflow to reload.
	st := teststack.Start(t, teststack.Options{})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "billing.yaml"), billingYAML)
	writeFile(t, filepath.Join(dir, "more", "sync.json"), billingJSON)

	rep, r := report(t, st, "-f", dir, "--set", "billing", "--dry-run")
	require.Equal(t, 0, r.code, r.errOut)
	require.Equal(t, float64(4), summary(rep)["create"], r.out)
	require.Empty(t, versions(t, st), "a dry run creates nothing")
	r = run(t, st, st.AdminToken, "calendar", "get", "holidays")
	require.Equal(t, cli.ExitNotFound, r.code)

	r = run(t, st, st.AdminToken, "apply", "-f", dir, "--set", "billing")
	require.Equal(t, 0, r.code, r.out+r.errOut)
	require.Contains(t, r.out, "set billing: 4 created, 0 updated, 0 unchanged, 0 deleted, 0 conflict(s), 0 error(s)")
	before := versions(t, st)
	require.Len(t, before, 3)
	require.Equal(t, []any{float64(1), map[string]any{"team": "billing", "tickgate.dev/set": "billing"}, false}, before["nightly-report"])
	require.Equal(t, true, before["close-books"].([]any)[2], "paused at creation")

	rep, r = report(t, st, "-f", dir, "--set", "billing")
	require.Equal(t, 0, r.code, r.errOut)
	require.Equal(t, map[string]float64{"create": 0, "update": 0, "unchanged": 4, "delete": 0, "conflict": 0, "error": 0}, summary(rep))
	require.Equal(t, before, versions(t, st), "a second apply changes nothing")

	// An edit: the plan names the field, from and to; the apply makes it.
	writeFile(t, filepath.Join(dir, "billing.yaml"), strings.Replace(billingYAML, `cron: "0 3 * * *"`, `cron: "30 3 * * *"`, 1))
	r = run(t, st, st.AdminToken, "apply", "-f", dir, "--set", "billing", "--dry-run")
	require.Equal(t, 0, r.code, r.errOut)
	require.Regexp(t, `update\s+Schedule\s+nightly-report\s+spec: \{"cron":"0 3 \* \* \*",.*\} → \{"cron":"30 3 \* \* \*"`, r.out)
	require.Contains(t, r.out, "1 to update, 3 unchanged")
	require.Equal(t, before, versions(t, st))
	r = run(t, st, st.AdminToken, "apply", "-f", dir, "--set", "billing")
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "0 created, 1 updated, 3 unchanged")
	require.Equal(t, float64(2), versions(t, st)["nightly-report"].([]any)[0])

	// Names held elsewhere: by no set, and by another set.
	r = run(t, st, st.AdminToken, "schedule", "create", "hand-made", "--interval", "1h", "--topic", "t", "--type", "x")
	require.Equal(t, 0, r.code, r.errOut)
	other := t.TempDir()
	writeFile(t, filepath.Join(other, "other.yaml"), "kind: Schedule\nname: theirs\nspec: {interval: 2h}\naction: {kind: event, topic: t, type: x}\n")
	r = run(t, st, st.AdminToken, "apply", "-f", other, "--set", "ops")
	require.Equal(t, 0, r.code, r.errOut)
	writeFile(t, filepath.Join(dir, "taken.yaml"), `kind: Schedule
name: hand-made
spec: {interval: 1h}
action: {kind: event, topic: changed, type: x}
---
kind: Schedule
name: theirs
spec: {interval: 5h}
action: {kind: event, topic: t, type: x}
`)
	held := versions(t, st)
	rep, r = report(t, st, "-f", dir, "--set", "billing")
	require.Equal(t, cli.ExitConflict, r.code, r.errOut)
	require.Equal(t, float64(2), summary(rep)["conflict"])
	owners := map[string]any{}
	for _, it := range rep["items"].([]any) {
		it := it.(map[string]any)
		if it["action"] == "conflict" {
			owners[it["name"].(string)] = it["owner"]
		}
	}
	require.Equal(t, map[string]any{"hand-made": nil, "theirs": "ops"}, owners)
	require.Equal(t, held, versions(t, st), "conflicts are left alone")
	r = run(t, st, st.AdminToken, "apply", "-f", dir, "--set", "billing", "--adopt")
	require.Equal(t, cli.ExitConflict, r.code, "another set's schedule is never taken: %s", r.out)
	require.Regexp(t, `update\s+Schedule\s+hand-made\s+action: .*"topic":"t".* → .*"topic":"changed"`, r.out)
	require.Regexp(t, `labels: \{\} → \{"tickgate.dev/set":"billing"\}`, r.out)
	require.Regexp(t, `conflict\s+Schedule\s+theirs\s+owned by set "ops": left alone`, r.out)
	after := versions(t, st)
	require.Equal(t, held["theirs"], after["theirs"])
	require.Equal(t, map[string]any{"tickgate.dev/set": "billing"}, after["hand-made"].([]any)[1])

	// Prune: only the set's own schedules the files dropped.
	require.NoError(t, os.Remove(filepath.Join(dir, "more", "sync.json")))
	require.NoError(t, os.Remove(filepath.Join(dir, "taken.yaml")))
	r = run(t, st, st.AdminToken, "apply", "-f", dir, "--set", "billing", "--prune", "--dry-run")
	require.Equal(t, 0, r.code, r.errOut)
	require.Regexp(t, `delete\s+Schedule\s+close-books`, r.out)
	require.Regexp(t, `delete\s+Schedule\s+hand-made`, r.out)
	require.Regexp(t, `delete\s+Schedule\s+hourly-sync`, r.out)
	require.Contains(t, r.out, "3 to delete")
	require.Len(t, versions(t, st), 5)
	r = run(t, st, st.AdminToken, "apply", "-f", dir, "--set", "billing", "--prune")
	require.Equal(t, 0, r.code, r.errOut)
	left := versions(t, st)
	require.ElementsMatch(t, []string{"nightly-report", "theirs"}, keys(left))
	r = run(t, st, st.AdminToken, "calendar", "get", "holidays")
	require.Equal(t, 0, r.code, "calendars are never pruned")

	// Export, and the export applied again: nothing to do.
	r = run(t, st, st.AdminToken, "export", "--selector", "tickgate.dev/set=billing")
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "kind: Calendar")
	require.Contains(t, r.out, "name: nightly-report")
	require.NotContains(t, r.out, "tickgate.dev/set")
	exported := filepath.Join(t.TempDir(), "exported.yaml")
	writeFile(t, exported, r.out)
	rep, r = report(t, st, "-f", exported, "--set", "billing")
	require.Equal(t, 0, r.code, r.errOut)
	require.Equal(t, map[string]float64{"create": 0, "update": 0, "unchanged": 2, "delete": 0, "conflict": 0, "error": 0}, summary(rep))
	exportDir := t.TempDir()
	r = run(t, st, st.AdminToken, "export", "--dir", exportDir)
	require.Equal(t, 0, r.code, r.errOut)
	files, _ := filepath.Glob(filepath.Join(exportDir, "*.yaml"))
	require.Len(t, files, 3, "two schedules and the calendar")

	// Bad documents: named, and nothing applied of them.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	writeFile(t, bad, "kind: Job\nname: x\n")
	r = run(t, st, st.AdminToken, "apply", "-f", bad, "--set", "billing")
	require.Equal(t, cli.ExitInvalid, r.code, r.errOut)
	require.Contains(t, r.errOut, "bad.yaml#1: kind must be Schedule or Calendar")
	writeFile(t, bad, "kind: Schedule\nname: broken\nspec: {cron: nope}\naction: {kind: event, topic: t, type: x}\n")
	r = run(t, st, st.AdminToken, "apply", "-f", bad, "--set", "billing")
	require.Equal(t, cli.ExitInvalid, r.code, r.errOut)
	require.Contains(t, r.out, "spec.cron")
	r = run(t, st, st.AdminToken, "apply", "-f", dir)
	require.Equal(t, cli.ExitUsage, r.code)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
