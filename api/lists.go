package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// Every list of the API answers one shape (a Page after ?limit= and ?cursor=): listPage is
// that shape once, and each list handler only says how to read its rows.

// cursorCodec reads a list's ?cursor= into a position and writes a row's position back.
type cursorCodec[P any] struct {
	decode func(echo.Context) (P, error)
	encode func(P) string
}

var (
	// idCursor pages by a bigint id.
	idCursor = cursorCodec[int64]{decode: CursorInt, encode: IntCursor}
	// nameCursor pages by a name.
	nameCursor = cursorCodec[string]{decode: DecodeCursor, encode: EncodeCursor}
)

// listPage answers one page: limit+1 rows after the cursor's position from fetch (the extra
// row only says a next page exists), each shown through view; at is a row's position.
func listPage[P, R, V any](c echo.Context, cursor cursorCodec[P], fetch func(ctx context.Context, after P, limit int) ([]R, error),
	view func(R) V, at func(R) P) error {
	page, _, err := pageOf(c, cursor, fetch, view, at)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}

// pageOf is listPage's page before it is answered, with the rows it shows (rows[i] is
// page.Items[i]'s), for a list that adds to its items.
func pageOf[P, R, V any](c echo.Context, cursor cursorCodec[P], fetch func(ctx context.Context, after P, limit int) ([]R, error),
	view func(R) V, at func(R) P) (Page[V], []R, error) {
	limit, err := Limit(c)
	if err != nil {
		return Page[V]{}, nil, err
	}
	after, err := cursor.decode(c)
	if err != nil {
		return Page[V]{}, nil, err
	}
	rows, err := fetch(c.Request().Context(), after, limit+1)
	if err != nil {
		return Page[V]{}, nil, err
	}
	return newPage(rows, limit, view, func(r R) string { return cursor.encode(at(r)) }), rows, nil
}

// listValues reads a filter parameter given as a comma-separated list, repeated or both
// (?status=FAILED,MISSED&status=SKIPPED), each value put in canonical case by canon and
// checked against allowed; absent, it is nil (no filter).
func listValues[T ~string](c echo.Context, name string, allowed []T, canon func(string) string) ([]string, error) {
	var out []string
	for _, v := range c.QueryParams()[name] {
		for _, one := range strings.Split(v, ",") {
			one = canon(strings.TrimSpace(one))
			if one == "" {
				continue
			}
			known := false
			for _, a := range allowed {
				known = known || T(one) == a
			}
			if !known {
				return nil, BadRequest(name, "unknown %s %q (want one of %s)", name, one, domain.Join(allowed))
			}
			out = append(out, one)
		}
	}
	return out, nil
}

// The values the runs lists filter on.
var (
	runStatuses = []domain.RunStatus{domain.RunBuffered, domain.RunRunning, domain.RunSucceeded, domain.RunFailed, domain.RunCanceled,
		domain.RunTerminated, domain.RunSkipped, domain.RunMissed}
	runTriggers      = []domain.Trigger{domain.TriggerScheduled, domain.TriggerCatchup, domain.TriggerManual, domain.TriggerBackfill}
	rolloutStatuses  = []domain.RolloutStatus{domain.RolloutRunning, domain.RolloutPaused, domain.RolloutDone, domain.RolloutFailed, domain.RolloutCanceled}
	scheduleStates   = []string{"active", "paused", "completed"}
	maxNameFilterLen = 128
)

// runFilter reads a runs list's ?status= and ?trigger=.
func runFilter(c echo.Context) (store.RunFilter, error) {
	statuses, err := listValues(c, "status", runStatuses, strings.ToUpper)
	if err != nil {
		return store.RunFilter{}, err
	}
	triggers, err := listValues(c, "trigger", runTriggers, strings.ToLower)
	if err != nil {
		return store.RunFilter{}, err
	}
	return store.RunFilter{Statuses: statuses, Triggers: triggers}, nil
}
