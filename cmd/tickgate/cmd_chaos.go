package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tickgate/tickgate/internal/dev/chaos"
	"github.com/tickgate/tickgate/internal/dev/devstack"
)

func init() {
	register("chaos", "run the stack under load while killing and restarting its parts; check the invariants (make chaos)", runChaos)
}

func runChaos(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	profileName := fs.String("profile", chaos.Full.Name, "load and faults: full (make chaos) or short (three minutes of faults, in make test)")
	dir := fs.String("dir", "", "where the run keeps its clusters and logs (default .dev/chaos/<time>)")
	seed := fs.Uint64("seed", 0, "fault plan seed, to repeat a run (0: random)")
	keep := fs.Bool("keep", false, "keep the clusters' data of a passing run (a failing run always keeps it)")
	faultPhase := fs.Duration("fault-phase", 0, "override the profile's fault phase length")
	settle := fs.Duration("settle", 0, "override the profile's bound on the wait for the work to finish after the faults")
	eventSchedules := fs.Int("event-schedules", 0, "override the profile's every-second event schedules (size the load to the machine: see docs/operations.md)")
	temporal := fs.String("temporal", chaos.TemporalDev, "the Temporal to run on: dev (the CLI's dev server) or server (the real server on PostgreSQL, the production shape)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p, err := chaos.ProfileByName(*profileName)
	if err != nil {
		return err
	}
	if *faultPhase > 0 {
		p.FaultPhase = *faultPhase
	}
	if *settle > 0 {
		p.Settle = *settle
	}
	if *eventSchedules > 0 {
		p.EventSchedules = *eventSchedules
	}
	if *dir == "" {
		root, err := devstack.RepoRoot()
		if err != nil {
			return err
		}
		*dir = chaos.DefaultDir(root)
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("chaos: own binary: %w", err)
	}
	start := time.Now()
	r, err := chaos.Run(ctx, p, chaos.Options{Binary: bin, Dir: *dir, Seed: *seed, Out: os.Stdout, Temporal: *temporal})
	if err != nil {
		return err
	}
	var report strings.Builder
	r.Print(&report)
	fmt.Print(report.String())
	if err := os.WriteFile(filepath.Join(*dir, "report.md"), []byte(report.String()), 0o644); err != nil { // #nosec G306 -- the chaos run's report, meant to be read and shared
		return fmt.Errorf("chaos: write report: %w", err)
	}
	if !r.Passed() {
		return fmt.Errorf("chaos: invariants broken or work unfinished after %s (logs and data in %s)", time.Since(start).Round(time.Second), *dir)
	}
	if !*keep {
		// A passing run keeps its logs and report; the clusters' data (hundreds of MB) goes.
		for _, data := range []string{"pg", "temporal.db", "temporal.db-shm", "temporal.db-wal"} {
			_ = os.RemoveAll(filepath.Join(*dir, data))
		}
	}
	return nil
}
