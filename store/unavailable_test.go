package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/store"
)

func TestIsUnavailable(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"nil":                   {nil, false},
		"not found":             {fmt.Errorf("schedule 3: %w", store.ErrNotFound), false},
		"unique violation":      {&pgconn.PgError{Code: "23505"}, false},
		"syntax error":          {&pgconn.PgError{Code: "42601"}, false},
		"admin shutdown":        {fmt.Errorf("claim: %w", &pgconn.PgError{Code: "57P01"}), true},
		"cannot connect now":    {&pgconn.PgError{Code: "57P03"}, true},
		"connection failure":    {&pgconn.PgError{Code: "08006"}, true},
		"connection lost (EOF)": {fmt.Errorf("list: %w", io.ErrUnexpectedEOF), true},
		"refused":               {&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		"reset":                 {fmt.Errorf("q: %w", syscall.ECONNRESET), true},
		"plain":                 {errors.New("boom"), false},
		"canceled":              {context.Canceled, false},
	} {
		require.Equal(t, tc.want, store.IsUnavailable(tc.err), name)
	}

	// A real refused connection, as one attempt of store.Connect reports it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now
	st, err := store.Connect(ctx, "postgres://postgres@"+addr+"/x?sslmode=disable&connect_timeout=2")
	require.Error(t, err)
	require.Nil(t, st)
	require.True(t, store.IsUnavailable(err), "%v", err)
}
