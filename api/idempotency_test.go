package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// TestIdempotentCreate: a creating POST sent twice with one Idempotency-Key creates once
// and answers the first response again; the same key with another body is 422; concurrent
// duplicates create once; the key is per token.
func TestIdempotentCreate(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	ctx := context.Background()
	count := func() int {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(ctx, "SELECT count(*) FROM schedules").Scan(&n))
		return n
	}
	body := `{"name":"idem","spec":{"interval":"1h"},"action":{"kind":"event","topic":"t","type":"x"}}`
	send := func(s *teststack.Stack, key, body string) (int, []byte, http.Header) {
		req, err := http.NewRequest(http.MethodPost, s.URL+"/api/v1/schedules", stringsReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", s.Headers["Authorization"])
		if key != "" {
			req.Header.Set(api.IdempotencyHeader, key)
		}
		resp, err := teststack.ContractClient(t).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var b []byte
		b, err = readAll(resp)
		require.NoError(t, err)
		return resp.StatusCode, b, resp.Header
	}

	status, first, h := send(st, "key-1", body)
	require.Equal(t, http.StatusCreated, status, "%s", first)
	require.Empty(t, h.Get(api.ReplayedHeader))
	status, again, h := send(st, "key-1", body)
	require.Equal(t, http.StatusCreated, status, "%s", again)
	require.Equal(t, "true", h.Get(api.ReplayedHeader))
	require.JSONEq(t, string(first), string(again))
	require.Equal(t, 1, count())

	// Without a key the duplicate is a conflict, as before.
	status, _, _ = send(st, "", body)
	require.Equal(t, http.StatusConflict, status)

	// Same key, different request: refused, nothing created.
	status, b, _ := send(st, "key-1", `{"name":"idem2","spec":{"interval":"1h"},"action":{"kind":"event","topic":"t","type":"x"}}`)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%s", b)
	var p api.Problem
	require.NoError(t, json.Unmarshal(b, &p))
	require.Equal(t, api.IdempotencyHeader, p.Field)
	require.Equal(t, 1, count())

	// A 4xx answer changed nothing and is not kept: no row, and the corrected request may
	// reuse the key.
	var keys int
	require.NoError(t, st.Store.Pool.QueryRow(ctx, "SELECT count(*) FROM idempotency_keys").Scan(&keys))
	bad := `{"name":"bad","spec":{"interval":"-1h"},"action":{"kind":"event","topic":"t","type":"x"}}`
	status, _, _ = send(st, "key-bad", bad)
	require.Equal(t, http.StatusBadRequest, status)
	status, _, h = send(st, "key-bad", bad)
	require.Equal(t, http.StatusBadRequest, status)
	require.Empty(t, h.Get(api.ReplayedHeader))
	var after int
	require.NoError(t, st.Store.Pool.QueryRow(ctx, "SELECT count(*) FROM idempotency_keys").Scan(&after))
	require.Equal(t, keys, after)
	status, b, _ = send(st, "key-bad", `{"name":"good","spec":{"interval":"1h"},"action":{"kind":"event","topic":"t","type":"x"}}`)
	require.Equal(t, http.StatusCreated, status, "%s", b)
	require.Equal(t, 2, count())

	// Concurrent duplicates: one schedule, every answer a 201 or a 409 "in progress".
	par := `{"name":"par","spec":{"interval":"1h"},"action":{"kind":"event","topic":"t","type":"x"}}`
	var wg sync.WaitGroup
	statuses := make([]int, 6)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], _, _ = send(st, "key-par", par)
		}()
	}
	wg.Wait()
	for _, s := range statuses {
		require.Contains(t, []int{http.StatusCreated, http.StatusConflict}, s)
	}
	require.Contains(t, statuses, http.StatusCreated)
	require.Equal(t, 3, count())

	// Keys belong to a token: another token's same key is a new request (here a conflict on the name).
	other := st.As(st.NewToken(t, "operator", ""))
	status, _, h = send(other, "key-1", body)
	require.Equal(t, http.StatusConflict, status)
	require.Empty(t, h.Get(api.ReplayedHeader))

	// Tokens are never stored for replay.
	req, _ := http.NewRequest(http.MethodPost, st.URL+"/api/v1/tokens", stringsReader(`{"role":"viewer"}`))
	req.Header.Set("Authorization", st.Headers["Authorization"])
	req.Header.Set(api.IdempotencyHeader, "tok")
	resp, err := teststack.ContractClient(t).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}
