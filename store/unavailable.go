package store

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// IsUnavailable reports whether err says PostgreSQL could not be reached or went away
// mid-request — refused or reset connections, a server shutting down or still starting,
// a connection lost before the answer — as opposed to a query it answered with an error.
// The API answers such a request 503 with Retry-After: it may be resent once the
// database is back. What it had written may or may not have committed: its transaction
// rolls back unless the connection broke after the commit reached the server, and an
// earlier transaction of the same request may have committed.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01–57P03: admin or crash shutdown, cannot
		// connect now (starting up or in recovery).
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	var netErr *net.OpError
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		pgconn.SafeToRetry(err)
}
