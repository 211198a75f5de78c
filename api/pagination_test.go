package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// walk pages through a list one item at a time and returns every item's JSON.
func walk(t *testing.T, st *teststack.Stack, path string) []string {
	t.Helper()
	var all []string
	cursor := ""
	for i := 0; i < 100; i++ {
		u := path + sep(path) + "limit=1"
		if cursor != "" {
			// The events feed hands out the last event id as next_cursor, to be sent back
			// as ?after= (its consumers store that id); every other list takes ?cursor=.
			param := "cursor"
			if strings.HasPrefix(path, "/api/v1/events") {
				param = "after"
			}
			u += "&" + param + "=" + url.QueryEscape(cursor)
		}
		var page struct {
			Items      []json.RawMessage `json:"items"`
			NextCursor string            `json:"next_cursor"`
		}
		st.JSON(t, http.MethodGet, u, nil, http.StatusOK, &page)
		require.LessOrEqual(t, len(page.Items), 1, "%s: limit=1 answered %d items", u, len(page.Items))
		for _, it := range page.Items {
			all = append(all, string(it))
		}
		if page.NextCursor == "" {
			return all
		}
		cursor = page.NextCursor
	}
	t.Fatalf("%s: more than 100 pages", path)
	return nil
}

func sep(path string) string {
	for _, c := range path {
		if c == '?' {
			return "&"
		}
	}
	return "?"
}

// TestCursorPaginationEverywhere: every list route pages with limit and cursor, and
// walking it one item at a time yields exactly the items of one big page, once each.
func TestCursorPaginationEverywhere(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	for _, n := range []string{"a", "b", "c"} {
		st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{"name": "pg-" + n, "spec": map[string]any{"interval": "1h"},
			"action": map[string]any{"kind": "event", "topic": "pg", "type": "t"}}, http.StatusCreated, nil)
	}
	for i := 0; i < 3; i++ {
		st.JSON(t, http.MethodPost, "/api/v1/schedules/pg-a/trigger", map[string]any{"overlap": "allow_all"}, http.StatusOK, nil)
	}
	var ro struct {
		ID int64 `json:"id"`
	}
	for i := 0; i < 2; i++ {
		st.JSON(t, http.MethodPost, "/api/v1/rollouts", map[string]any{"name": "pg", "parallel_limit": 1, "tasks": []map[string]any{
			{"database": "x", "type": "DDL", "version": "1", "executor": "external"},
			{"database": "x", "type": "DDL", "version": "2", "executor": "external"},
			{"database": "y", "type": "DML", "version": "1", "executor": "external"},
		}}, http.StatusCreated, &ro)
	}
	st.JSON(t, http.MethodPost, "/api/v1/pcs", map[string]any{"name": "pg-pc"}, http.StatusCreated, nil)
	st.JSON(t, http.MethodPost, "/api/v1/pcs", map[string]any{"name": "pg-pc2"}, http.StatusCreated, nil)
	for _, d := range []string{"d1", "d2", "d3"} {
		st.JSON(t, http.MethodPost, "/api/v1/devices", map[string]any{"pc": "pg-pc", "serial": d}, http.StatusCreated, nil)
	}
	var task struct {
		ID int64 `json:"id"`
	}
	st.JSON(t, http.MethodPost, "/api/v1/tasks", map[string]any{"payload": map[string]any{"n": 1}}, http.StatusCreated, &task)
	st.JSON(t, http.MethodPost, "/api/v1/tasks", map[string]any{"payload": map[string]any{"n": 2}}, http.StatusCreated, nil)
	st.NewToken(t, "viewer", "")
	deviceExecutions := "/api/v1/tasks/" + strconv.FormatInt(task.ID, 10) + "/devices"
	require.Eventually(t, func() bool { return len(walk(t, st, deviceExecutions)) == 3 }, 30*time.Second, 100*time.Millisecond)
	require.Eventually(t, func() bool { return len(walk(t, st, "/api/v1/schedules/pg-a/runs")) == 3 }, 30*time.Second, 100*time.Millisecond)
	require.Eventually(t, func() bool { return len(walk(t, st, "/api/v1/events?topic=pg")) == 3 }, 30*time.Second, 100*time.Millisecond)

	for path, atLeast := range map[string]int{
		"/api/v1/schedules":                          3,
		"/api/v1/schedules?state=active&name=PG-":    3,
		"/api/v1/runs":                               3,
		"/api/v1/schedules/pg-a/runs":                3,
		"/api/v1/events?topic=pg":                    3,
		"/api/v1/rollouts":                           2,
		"/api/v1/rollouts/" + itoa(ro.ID) + "/tasks": 3,
		"/api/v1/pcs":                                2,
		"/api/v1/devices":                            3,
		"/api/v1/tasks":                              2,
		deviceExecutions:                             3,
		"/api/v1/tokens":                             2,
	} {
		items := walk(t, st, path)
		require.GreaterOrEqual(t, len(items), atLeast, path)
		seen := map[string]bool{}
		for _, it := range items {
			require.False(t, seen[it], "%s: an item came twice across pages", path)
			seen[it] = true
		}
		var big struct {
			Items      []json.RawMessage `json:"items"`
			NextCursor string            `json:"next_cursor"`
		}
		st.JSON(t, http.MethodGet, path+sep(path)+"limit=500", nil, http.StatusOK, &big)
		require.Empty(t, big.NextCursor, path)
		require.Len(t, big.Items, len(items), "%s: walking one by one and one big page disagree", path)
		// A bad cursor or limit is a 400 naming the parameter.
		var p struct {
			Field string `json:"field"`
		}
		// "garbage" and "AA" are base64 of bytes no position holds (invalid UTF-8, a NUL):
		// they must not reach the database, which refuses them as text (a 500 before).
		for _, cursor := range []string{"%21%21", "garbage", "AA"} {
			p.Field = ""
			st.JSON(t, http.MethodGet, path+sep(path)+"cursor="+cursor, nil, http.StatusBadRequest, &p)
			require.Equal(t, "cursor", p.Field, "%s cursor=%s", path, cursor)
		}
		st.JSON(t, http.MethodGet, path+sep(path)+"limit=0", nil, http.StatusBadRequest, &p)
		require.Equal(t, "limit", p.Field, path)
	}
}
