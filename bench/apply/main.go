// Command bench-apply measures schedules as code at size (`make bench-apply`): a directory
// of -schedules manifest files, one schedule each, applied through the tickgate binary's CLI
// (`tickgate apply -f DIR --set bench`, built from this checkout) against the API and a
// worker on their own PostgreSQL cluster and Temporal dev server, as make dev runs them:
//
//   - the first apply creates them all;
//   - a dry run plans again (every one unchanged) and changes nothing;
//   - the second apply reports 0 changes, and the database shows it changed nothing: every
//     version still 1, no history entry;
//   - a third apply after -edits files changed and -edits removed, with --prune: that many
//     updated and deleted, and the schedules outside the set (made without it) untouched.
//
// It prints a Markdown table ending with one `RESULT key=value …` line.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/bench/internal/benchstack"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/dev/devstack"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/worker"
)

var (
	flagSchedules   = flag.Int("schedules", 1000, "manifest files, one schedule each")
	flagEdits       = flag.Int("edits", 10, "files changed, and files removed, before the pruning apply")
	flagOutsiders   = flag.Int("outsiders", 20, "schedules made outside the set (they must stay as they are)")
	flagConcurrency = flag.Int("concurrency", 8, "apply's --concurrency")
)

func main() {
	flag.Parse()
	log.SetFlags(log.Ltime)
	if err := run(context.Background()); err != nil {
		log.Fatalf("bench-apply: %v", err)
	}
}

func run(ctx context.Context) error {
	root, err := devstack.RepoRoot()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "bench-apply-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "tickgate")
	log.Printf("building the tickgate binary")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/tickgate") // #nosec G204 -- the go tool building this repository's tickgate
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build: %w", err)
	}

	stack, err := benchstack.Start(ctx, benchstack.Options{Name: "apply", PGPort: 55490})
	if err != nil {
		return err
	}
	defer stack.Stop()
	url, err := stack.FreshDatabase(ctx, "bench_apply")
	if err != nil {
		return err
	}
	cfg, err := stack.Config(url)
	if err != nil {
		return err
	}
	cfg.TaskQueue = "bench-apply"
	st, err := store.Open(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	tc, err := cfg.DialTemporal(ctx)
	if err != nil {
		return err
	}
	defer tc.Close()
	deps := worker.Deps{Config: cfg, Store: st, Temporal: tc}
	w, err := worker.New(deps)
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	defer w.Stop()
	if err := worker.StartSingletons(ctx, deps); err != nil {
		return err
	}
	srv := httptest.NewServer(api.New(&api.Server{Store: st, Temporal: tc, Starter: &starter.Starter{Client: tc, TaskQueue: cfg.TaskQueue},
		Logf: func(string, ...any) {}}))
	defer srv.Close()
	_, token, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleAdmin, Note: "bench-apply"})
	if err != nil {
		return err
	}
	tickgate := func(args ...string) (string, time.Duration, error) {
		cmd := exec.CommandContext(ctx, bin, args...) // #nosec G204 -- the tickgate binary this bench just built
		cmd.Env = append(os.Environ(), "TICKGATE_SERVER="+srv.URL, "TICKGATE_TOKEN="+token)
		began := time.Now()
		out, err := cmd.Output()
		took := time.Since(began)
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				err = fmt.Errorf("%w: %s", err, ee.Stderr)
			}
			return string(out), took, fmt.Errorf("tickgate %s: %w", strings.Join(args, " "), err)
		}
		return string(out), took, nil
	}

	// Schedules outside the set, made one by one through the CLI.
	for i := range *flagOutsiders {
		if _, _, err := tickgate("schedule", "create", fmt.Sprintf("outsider-%03d", i), "--interval", "1h", "--topic", "t", "--type", "x"); err != nil {
			return err
		}
	}
	dir := filepath.Join(work, "schedules")
	if err := os.MkdirAll(dir, 0o755); err != nil { // #nosec G301 -- the bench's manifests, laid out as a checkout holds them
		return err
	}
	for i := range 20 {
		if err := os.MkdirAll(filepath.Join(dir, fmt.Sprintf("team-%02d", i)), 0o755); err != nil { // #nosec G301 -- the bench's manifests, laid out as a checkout holds them
			return err
		}
	}
	for i := range *flagSchedules {
		if err := os.WriteFile(manifestPath(dir, i), []byte(manifest(i, "report.due")), 0o644); err != nil { // #nosec G306 -- a manifest of the bench, no secret
			return err
		}
	}
	apply := []string{"apply", "-f", dir, "--set", "bench", "--concurrency", fmt.Sprint(*flagConcurrency)}
	summary := func(out string) string {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[len(lines)-1]
	}
	type row struct {
		name    string
		took    time.Duration
		summary string
	}
	var rows []row
	step := func(name, want string, args ...string) error {
		out, took, err := tickgate(args...)
		if err != nil {
			return err
		}
		s := summary(out)
		log.Printf("%s: %s in %s", name, s, took.Round(time.Millisecond))
		if !strings.Contains(s, want) {
			return fmt.Errorf("%s: want %q in %q", name, want, s)
		}
		rows = append(rows, row{name, took, s})
		return nil
	}
	n := *flagSchedules
	if err := step("first apply (creates)", fmt.Sprintf("%d created, 0 updated, 0 unchanged", n), apply...); err != nil {
		return err
	}
	if err := step("dry run", fmt.Sprintf("0 to create, 0 to update, %d unchanged", n), append(apply, "--dry-run")...); err != nil {
		return err
	}
	if err := step("second apply", fmt.Sprintf("0 created, 0 updated, %d unchanged, 0 deleted", n), apply...); err != nil {
		return err
	}
	var maxVersion, history, labelled int64
	if err := st.Pool.QueryRow(ctx, `SELECT coalesce(max(version), 0), (SELECT count(*) FROM schedule_history),
		count(*) FILTER (WHERE labels->>'tickgate.dev/set' = 'bench') FROM schedules`).Scan(&maxVersion, &history, &labelled); err != nil {
		return err
	}
	if maxVersion != 1 || history != 0 || labelled != int64(n) {
		return fmt.Errorf("after the second apply: max version %d, %d history entries, %d labelled (want 1, 0, %d)", maxVersion, history, labelled, n)
	}
	e := *flagEdits
	for i := range e {
		if err := os.WriteFile(manifestPath(dir, i), []byte(manifest(i, "report.late")), 0o644); err != nil { // #nosec G306 -- a manifest of the bench, no secret
			return err
		}
		if err := os.Remove(manifestPath(dir, n-1-i)); err != nil {
			return err
		}
	}
	if err := step("apply --prune after edits", fmt.Sprintf("0 created, %d updated, %d unchanged, %d deleted", e, n-2*e, e), append(apply, "--prune")...); err != nil {
		return err
	}
	var outsiders, outsiderVersion int64
	if err := st.Pool.QueryRow(ctx, `SELECT count(*), coalesce(max(version), 0) FROM schedules WHERE name LIKE 'outsider-%'`).Scan(&outsiders, &outsiderVersion); err != nil {
		return err
	}
	if outsiders != int64(*flagOutsiders) || outsiderVersion > 1 {
		return fmt.Errorf("outsiders: %d left, max version %d (want %d, 1)", outsiders, outsiderVersion, *flagOutsiders)
	}

	fmt.Printf("\n### tickgate apply: %d schedule files through the CLI (--concurrency %d), on this machine\n\n", n, *flagConcurrency)
	fmt.Println("| step | time | the CLI's summary |")
	fmt.Println("| --- | ---: | --- |")
	for _, r := range rows {
		fmt.Printf("| %s | %.2f s | %s |\n", r.name, r.took.Seconds(), r.summary)
	}
	fmt.Printf("\nAfter the second apply: every version 1, %d history entries; after the prune: the %d schedules outside the set untouched.\n\n", history, outsiders)
	fmt.Printf("RESULT schedules=%d first_s=%.2f dry_run_s=%.2f second_s=%.2f prune_s=%.2f second_changes=0\n",
		n, rows[0].took.Seconds(), rows[1].took.Seconds(), rows[2].took.Seconds(), rows[3].took.Seconds())
	return nil
}

func manifestPath(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("team-%02d", i%20), fmt.Sprintf("report-%04d.yaml", i))
}

// manifest is schedule i's file: crons and intervals, event actions, labels.
func manifest(i int, typ string) string {
	spec := fmt.Sprintf(`{cron: "%d %d * * *", timezone: Europe/Berlin}`, i%60, i%24)
	if i%3 == 0 {
		spec = fmt.Sprintf(`{interval: %dm}`, 5+i%55)
	}
	return fmt.Sprintf(`kind: Schedule
name: report-%04d
labels: {team: team-%02d, tier: "%d"}
spec: %s
action: {kind: event, topic: reports, type: %s, data: {report: %d}}
policies: {overlap: skip, catchup_window: 1h}
`, i, i%20, i%3, spec, typ, i)
}
