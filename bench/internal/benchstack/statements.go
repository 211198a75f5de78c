package benchstack

import (
	"context"
	"strings"

	"github.com/tickgate/tickgate/internal/dev/devstack"
)

// enableStatementStats loads pg_stat_statements (shared_preload_libraries, which takes a
// restart), so a bench can count the statements tickgate sends; a cluster that loads it
// already (the data directory is kept between runs) is left as it is. It counts, it does
// not change what a statement does. With its defaults it counts top-level statements only,
// utility ones (BEGIN, COMMIT) included.
func enableStatementStats(ctx context.Context, pg *devstack.Postgres) error {
	return restartWith(ctx, pg, "shared_preload_libraries", func(libs string) (string, bool) {
		if strings.Contains(libs, "pg_stat_statements") {
			return libs, true
		}
		if libs != "" {
			libs += ","
		}
		return libs + "pg_stat_statements", false
	})
}
