package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/starter"
)

func init() {
	register("versions", "report, per workflow change, how many open workflows may still need its old branch", runVersions)
}

// runVersions prints the change report of the namespace TEMPORAL_ADDRESS and
// TEMPORAL_NAMESPACE point to (docs/production.md "Retiring a workflow change").
func runVersions(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("versions", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	tc, err := cfg.DialTemporal(ctx)
	if err != nil {
		return err
	}
	defer tc.Close()
	report, err := (&starter.Starter{Client: tc, TaskQueue: cfg.TaskQueue}).ChangeReport(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CHANGE\tVERSION\tWORKFLOWS\tOPEN\tNEED OLD BRANCH\tOLD BRANCH")
	for _, u := range report {
		state := "still needed"
		if u.NeedOld == 0 {
			state = "retirable here"
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%d\t%s\n", u.Change.ID, u.Change.Max, strings.Join(u.Change.Workflows, ","), u.Open, u.NeedOld, state)
	}
	return w.Flush()
}
