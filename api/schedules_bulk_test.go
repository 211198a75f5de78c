package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// TestBulkCreateIsAllOrNothingAndIdempotentPerName: a bulk create makes every schedule it
// is given, at rest and planned; the same request again creates nothing more and answers
// each as "exists"; a bad item, a name held by another definition or too many items are a
// 4xx naming the field, and change nothing. The schedules created fire.
func TestBulkCreateIsAllOrNothingAndIdempotentPerName(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	ctx := context.Background()
	item := func(name, every string) map[string]any {
		return map[string]any{"name": name, "spec": map[string]any{"interval": every},
			"action": map[string]any{"kind": "event", "topic": "bulk", "type": "tick"}}
	}
	body := map[string]any{"items": []any{item("bulk-a", "1s"), item("bulk-b", "2s"), item("bulk-c", "1h")}}
	var first api.BulkCreateView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/bulk", body, http.StatusCreated, &first)
	require.Len(t, first.Items, 3)
	for i, name := range []string{"bulk-a", "bulk-b", "bulk-c"} {
		require.Equal(t, name, first.Items[i].Name)
		require.Equal(t, "created", first.Items[i].Status)
		require.NotNil(t, first.Items[i].Schedule.NextRunAt)
	}
	row, err := st.Store.GetSchedule(ctx, "bulk-c")
	require.NoError(t, err)
	require.NotNil(t, row.PlanAt, "created at rest, with the planner's first look")
	require.Nil(t, row.Owner)

	var again api.BulkCreateView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/bulk", body, http.StatusOK, &again)
	for _, it := range again.Items {
		require.Equal(t, "exists", it.Status, it.Name)
	}

	count := func() int {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(ctx, "SELECT count(*) FROM schedules").Scan(&n))
		return n
	}
	problem := func(body any, status int, field string) {
		t.Helper()
		got, b := st.Do(t, http.MethodPost, "/api/v1/schedules/bulk", body)
		require.Equal(t, status, got, "%s", b)
		require.Contains(t, string(b), fmt.Sprintf(`"field":%q`, field))
	}
	problem(map[string]any{"items": []any{item("bulk-d", "1s"), item("bulk-a", "5s")}}, http.StatusConflict, "items[1].name")
	bad := item("bulk-e", "1s")
	bad["spec"] = map[string]any{"cron": "61 * * * *"}
	problem(map[string]any{"items": []any{item("bulk-f", "1s"), bad}}, http.StatusBadRequest, "items[1].spec.cron")
	problem(map[string]any{"items": []any{item("bulk-g", "1s"), item("bulk-g", "1s")}}, http.StatusBadRequest, "items[1].name")
	problem(map[string]any{"items": []any{}}, http.StatusBadRequest, "items")
	var many []any
	for i := 0; i <= api.MaxBulkSchedules; i++ {
		many = append(many, item(fmt.Sprintf("bulk-many-%d", i), "1h"))
	}
	problem(map[string]any{"items": many}, http.StatusBadRequest, "items")
	require.Equal(t, 3, count(), "no refused request created anything")

	require.Eventually(t, func() bool { return len(listRuns(t, st, "bulk-a")) >= 2 }, 20*time.Second, 100*time.Millisecond,
		"the planner fires what a bulk create made")
}
