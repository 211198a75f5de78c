package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// A keyed request whose database connection broke mid-request may have committed: its key
// stays in progress, so a resend cannot apply it twice. Any other failure releases the key
// for a resend.
func TestIdempotencyKeepsTheKeyWhenTheDatabaseWentAwayMidRequest(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	tok, _, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleAdmin})
	require.NoError(t, err)
	s := &Server{Store: st, Logf: t.Logf}
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler(nil)
	const body = `{"name":"r"}`
	hash := sha256.Sum256([]byte(body))

	for name, tc := range map[string]struct {
		err        error
		wantStatus int
		kept       bool
	}{
		"connection lost mid-request": {fmt.Errorf("create rollout: %w", io.ErrUnexpectedEOF), http.StatusServiceUnavailable, true},
		"handler failed":              {errors.New("boom"), http.StatusInternalServerError, false},
		"bad input":                   {BadRequest("name", "bad"), http.StatusBadRequest, false},
	} {
		key := "key-" + strings.ReplaceAll(name, " ", "-")
		req := httptest.NewRequest(http.MethodPost, "/api/v1/rollouts", strings.NewReader(body))
		req.Header.Set(IdempotencyHeader, key)
		rec := httptest.NewRecorder()
		c := e.NewContext(req, rec)
		c.Set(principalKey, &Principal{TokenID: tok.ID, Role: domain.RoleAdmin})
		require.NoError(t, s.idempotency(func(echo.Context) error { return tc.err })(c), name)
		require.Equal(t, tc.wantStatus, rec.Code, name)

		_, err := st.BeginIdempotent(ctx, store.IdempotencyKey{TokenID: tok.ID, Key: key, Method: http.MethodPost, Path: "/api/v1/rollouts"}, hash[:])
		if tc.kept {
			require.ErrorIs(t, err, store.ErrInFlight, name)
		} else {
			require.NoError(t, err, "%s: the key was released", name)
		}
	}
}
