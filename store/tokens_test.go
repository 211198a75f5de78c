package store_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// TestTokenLifecycle: a token is random, stored only as its hash, authenticates until it is
// revoked, and an agent token carries its PC.
func TestTokenLifecycle(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()

	row, token, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleOperator, Note: "ci"})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(token, store.TokenPrefix))
	require.Greater(t, len(token), 40)
	require.True(t, strings.HasPrefix(token, row.Prefix))
	_, other, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleOperator})
	require.NoError(t, err)
	require.NotEqual(t, token, other)

	// Only the hash is in the database: no column holds the token.
	var n int
	require.NoError(t, st.Pool.QueryRow(ctx,
		"SELECT count(*) FROM api_tokens t WHERE position($1 in t::text) > 0", token).Scan(&n))
	require.Zero(t, n)

	got, err := st.Authenticate(ctx, token)
	require.NoError(t, err)
	require.Equal(t, row.ID, got.ID)
	require.Equal(t, domain.RoleOperator, got.Role)
	_, err = st.Authenticate(ctx, token+"x")
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = st.Authenticate(ctx, "not-a-token")
	require.ErrorIs(t, err, store.ErrNotFound)

	revoked, err := st.RevokeToken(ctx, row.ID)
	require.NoError(t, err)
	require.NotNil(t, revoked.RevokedAt)
	_, err = st.Authenticate(ctx, token)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = st.RevokeToken(ctx, 999999)
	require.ErrorIs(t, err, store.ErrNotFound)

	agent, _, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleAgent, PC: "pc-1"})
	require.NoError(t, err)
	require.Equal(t, "pc-1", *agent.Pc)
	_, _, err = st.CreateToken(ctx, store.NewToken{Role: domain.RoleAgent})
	require.Error(t, err)
	_, _, err = st.CreateToken(ctx, store.NewToken{Role: domain.RoleViewer, PC: "pc-1"})
	require.Error(t, err)
	_, _, err = st.CreateToken(ctx, store.NewToken{Role: "root"})
	require.Error(t, err)

	list, err := st.ListTokens(ctx, 0, 2)
	require.NoError(t, err)
	require.Len(t, list, 2)
	rest, err := st.ListTokens(ctx, list[1].ID, 10)
	require.NoError(t, err)
	require.Len(t, rest, 1)
}

// TestIdempotencyKeyOneOwner: of many concurrent requests with one key exactly one owns it;
// once answered, the same request gets the stored answer and a different body is refused.
func TestIdempotencyKeyOneOwner(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	tok, _, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleAdmin})
	require.NoError(t, err)
	k := store.IdempotencyKey{TokenID: tok.ID, Key: "k1", Method: "POST", Path: "/api/v1/schedules"}
	hash := []byte("body-hash")

	var wg sync.WaitGroup
	var mu sync.Mutex
	owners, inFlight := 0, 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := st.BeginIdempotent(ctx, k, hash)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && resp == nil:
				owners++
			case err == store.ErrInFlight:
				inFlight++
			default:
				t.Errorf("unexpected %v %v", resp, err)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 1, owners)
	require.Equal(t, 7, inFlight)

	require.NoError(t, st.FinishIdempotent(ctx, k, store.StoredResponse{Status: 201, ContentType: "application/json", Body: []byte(`{"id":1}`)}))
	resp, err := st.BeginIdempotent(ctx, k, hash)
	require.NoError(t, err)
	require.Equal(t, &store.StoredResponse{Status: 201, ContentType: "application/json", Body: []byte(`{"id":1}`)}, resp)
	_, err = st.BeginIdempotent(ctx, k, []byte("other"))
	require.ErrorIs(t, err, store.ErrKeyReused)

	// A released key (the request failed) can be claimed again.
	k2 := k
	k2.Key = "k2"
	resp, err = st.BeginIdempotent(ctx, k2, hash)
	require.NoError(t, err)
	require.Nil(t, resp)
	require.NoError(t, st.ForgetIdempotent(ctx, k2))
	resp, err = st.BeginIdempotent(ctx, k2, hash)
	require.NoError(t, err)
	require.Nil(t, resp)

	// Pruning forgets keys older than the cut-off only.
	_, err = st.Pool.Exec(ctx, "UPDATE idempotency_keys SET created_at = now() - interval '2 days' WHERE key = 'k1'")
	require.NoError(t, err)
	n, err := st.PruneIdempotencyKeys(ctx, time.Now().Add(-24*time.Hour))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	resp, err = st.BeginIdempotent(ctx, k, []byte("other"))
	require.NoError(t, err)
	require.Nil(t, resp, "a pruned key is new again")
}
