package store

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// linkWatch keeps the pool from handing out a connection that died while it sat idle.
//
// pgxpool pings a connection before handing it out only when it has been idle for more
// than a second, so when PostgreSQL (or the link to it) goes away and comes back within
// a second of the pool's last statements, the idle connections the outage cut are handed
// to the next statements, which fail with "unexpected EOF" although the database answers
// again. The watch notes when the pool last saw a connection break — a statement that
// left its connection closed, or a connection that could not be opened — and has every
// connection that went idle before that moment pinged once on its next acquire. Healthy
// links pay nothing; after a break each surviving idle connection costs one ping.
type linkWatch struct {
	// next is the caller's tracer (WithQueryTracer), nil when untraced.
	next pgx.QueryTracer
	// brokeAt is when a break was last seen, in Unix nanoseconds (0: never).
	brokeAt atomic.Int64
	now     func() time.Time
}

func newLinkWatch(next pgx.QueryTracer) *linkWatch {
	return &linkWatch{next: next, now: time.Now}
}

// install makes w the pool's tracer and ping rule.
func (w *linkWatch) install(cfg *pgxpool.Config) {
	cfg.ConnConfig.Tracer = w
	cfg.ShouldPing = w.shouldPing
}

func (w *linkWatch) sawBreak() { w.brokeAt.Store(w.now().UnixNano()) }

// shouldPing keeps pgxpool's own rule (idle for more than a second) and adds: idle since
// before the last break.
func (w *linkWatch) shouldPing(_ context.Context, p pgxpool.ShouldPingParams) bool {
	if p.IdleDuration > time.Second {
		return true
	}
	broke := w.brokeAt.Load()
	return broke != 0 && w.now().Add(-p.IdleDuration).UnixNano() <= broke
}

// TraceRelease sees every connection handed back to the pool: one that comes back closed
// broke under its statement (pgx closes a connection on a network error or a cancelled
// statement; either way its idle siblings are worth a ping).
func (w *linkWatch) TraceRelease(_ *pgxpool.Pool, d pgxpool.TraceReleaseData) {
	if d.Conn != nil && d.Conn.IsClosed() {
		w.sawBreak()
	}
}

// TraceConnectStart implements pgx.ConnectTracer.
func (w *linkWatch) TraceConnectStart(ctx context.Context, _ pgx.TraceConnectStartData) context.Context {
	return ctx
}

// TraceConnectEnd notes a connection that could not be opened: the server or the link
// is down, so the idle connections may be too.
func (w *linkWatch) TraceConnectEnd(_ context.Context, d pgx.TraceConnectEndData) {
	if d.Err != nil {
		w.sawBreak()
	}
}

// TraceQueryStart passes the statement to the caller's tracer.
func (w *linkWatch) TraceQueryStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if w.next == nil {
		return ctx
	}
	return w.next.TraceQueryStart(ctx, conn, d)
}

// TraceQueryEnd passes the statement's end to the caller's tracer.
func (w *linkWatch) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryEndData) {
	if w.next != nil {
		w.next.TraceQueryEnd(ctx, conn, d)
	}
}
