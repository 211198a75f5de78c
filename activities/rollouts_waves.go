package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/activity"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/store"
)

// A rollout's wave boundary (docs/progressive.md): after the bake, the health checks of the
// wave that ended — an SQL probe on each of its databases, through the sql executor's DSN
// configuration, and an HTTP check — decide whether the next wave opens (PassWave) or the
// rollout pauses (FailWave).

// WaveState is where a rollout's open wave stands (store.WaveState), for its workflow.
type WaveState struct {
	Wave, Waves int32
	// Status: RUNNING, BAKING, CHECKING, PASSED or FAILED (store's Wave* statuses).
	Status    string
	BakeUntil *time.Time `json:",omitempty"`
	Reason    string     `json:",omitempty"`
	// Opened: the claim's step opened Wave (no bake, no checks): its tasks may be promoted.
	Opened bool `json:",omitempty"`
}

func waveStateFrom(w *store.WaveState) *WaveState {
	if w == nil {
		return nil
	}
	return &WaveState{Wave: w.Wave, Waves: w.Waves, Status: w.Status, BakeUntil: w.BakeUntil, Reason: w.Reason, Opened: w.Opened}
}

// WaveChecksInput asks for a wave's health checks once its bake is over.
type WaveChecksInput struct {
	RolloutID int64
	Wave      int32
	// Now is the workflow's time when it asked for the checks (kept in its history; the
	// verdict is recorded at the time the checks end).
	Now time.Time
}

// WaveChecksResult is what the checks decided.
type WaveChecksResult struct {
	// Status is the wave's status afterwards: PASSED (the next wave is open), FAILED (the
	// rollout is paused), or what it was when the checks had nothing to do (canceled).
	Status string
	Reason string `json:",omitempty"`
	// Promoted counts the tasks promoted right after the next wave opened.
	Promoted int `json:",omitempty"`
}

// HealthConcurrency is how many databases a wave's SQL probe runs on at once.
const HealthConcurrency = 8

// RunWaveChecks runs a wave's health checks after its bake and records the verdict: all
// pass (or there are none) — the next wave opens and a promotion round runs at once, so its
// tasks are AVAILABLE when this returns; one fails — the wave is FAILED and the rollout
// paused, saying which check failed on which target. A retry after the verdict was recorded
// changes nothing.
func (a *RolloutActivities) RunWaveChecks(ctx context.Context, in WaveChecksInput) (WaveChecksResult, error) {
	w, st, run, err := a.Store.BeginWaveChecks(ctx, in.RolloutID, in.Wave, in.Now)
	if err != nil {
		return WaveChecksResult{}, err
	}
	if !run {
		return WaveChecksResult{Status: w.Status, Reason: w.Reason}, nil
	}
	var results []store.HealthResult
	if st != nil && st.Health != nil {
		results = a.healthChecks(ctx, *st.Health, w.Databases)
	}
	if ctx.Err() != nil {
		return WaveChecksResult{}, ctx.Err()
	}
	// The verdict's time is when the checks ended (the activity's clock), not when the
	// workflow asked for them.
	now := time.Now().UTC()
	for _, r := range results {
		if r.OK {
			continue
		}
		reason := fmt.Sprintf("health check failed on %s: %s", r.Target, r.Detail)
		if _, err := a.Store.FailWave(ctx, in.RolloutID, in.Wave, reason, results, now); err != nil {
			return WaveChecksResult{}, err
		}
		a.promoteNow(ctx, in.RolloutID, "a wave failed") // the later waves' tasks say why they wait
		return WaveChecksResult{Status: domain.WaveFailed, Reason: reason}, nil
	}
	passed, err := a.Store.PassWave(ctx, in.RolloutID, in.Wave, results, now)
	if err != nil {
		return WaveChecksResult{}, err
	}
	if !passed {
		cur, err := a.Store.ListRolloutWaves(ctx, in.RolloutID)
		if err != nil || int(in.Wave) > len(cur) {
			return WaveChecksResult{}, err
		}
		return WaveChecksResult{Status: cur[in.Wave-1].Status, Reason: cur[in.Wave-1].Reason}, nil
	}
	// The next wave's tasks are promoted now, not at the promoter's next round.
	promoted := a.promoteNow(ctx, in.RolloutID, "a wave passed")
	return WaveChecksResult{Status: domain.WavePassed, Promoted: promoted}, nil
}

// promoteNow runs a promotion round at once, so that what a wave's outcome changed — the
// next wave's tasks promoted, or the waiting causes of the later waves' tasks — is true
// without waiting for the promoter's next round. A round that fails is the next round's
// to do (the workflow nudges the promoter).
func (a *RolloutActivities) promoteNow(ctx context.Context, rolloutID int64, after string) int {
	p, err := a.PromoteRollouts(ctx, PromoteInput{})
	if err != nil {
		activity.GetLogger(ctx).Warn("promotion after "+after, "rollout", rolloutID, "error", err)
	}
	return p.Promoted
}

// healthChecks runs the SQL probe on each database and the HTTP check, each bounded by the
// check's timeout, and returns every result (failures included), the databases in order.
func (a *RolloutActivities) healthChecks(ctx context.Context, h domain.HealthCheck, databases []string) []store.HealthResult {
	timeout := h.TimeoutOrDefault()
	var (
		mu      sync.Mutex
		results = make([]store.HealthResult, 0, len(databases)+1)
		wg      sync.WaitGroup
		sem     = make(chan struct{}, HealthConcurrency)
	)
	add := func(r store.HealthResult) {
		mu.Lock()
		defer mu.Unlock()
		results = append(results, r)
	}
	stop := heartbeatEvery(ctx, 5*time.Second)
	defer stop()
	if h.SQL != "" {
		for _, db := range databases {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				add(a.sqlProbe(ctx, db, h.SQL, timeout))
			}()
		}
	}
	if h.HTTP != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			add(a.httpCheck(ctx, h.HTTP, timeout))
		}()
	}
	wg.Wait()
	// In a fixed order: the databases as the wave lists them, then HTTP.
	order := make(map[string]int, len(databases))
	for i, db := range databases {
		order[db] = i
	}
	sortResults(results, order)
	return results
}

func sortResults(rs []store.HealthResult, order map[string]int) {
	rank := func(r store.HealthResult) int {
		if r.Check == "http" {
			return len(order)
		}
		return order[r.Target]
	}
	slices.SortStableFunc(rs, func(a, b store.HealthResult) int { return rank(a) - rank(b) })
}

// sqlProbe runs the probe on one database in a read-only transaction, through the
// database's read-only DSN when TICKGATE_SQL_PROBE_TARGETS gives one (else the sql
// executor's), under a server-side statement_timeout of the check's timeout and the lock
// timeout (sql_targets.go), over the extended query protocol (one statement). It passes
// when the statement runs and its first row's first value is not false, NULL or zero; it
// fails on an error, on no row, or on such a value. A database that cannot be reached is
// tried again until the timeout: a restart of a few seconds is not a failed check.
func (a *RolloutActivities) sqlProbe(ctx context.Context, db, query string, timeout time.Duration) (res store.HealthResult) {
	res = store.HealthResult{Check: "sql", Target: db}
	defer func() { res.At = time.Now().UTC() }()
	if err := domain.CheckOneStatement(query); err != nil {
		res.Detail = "the probe " + err.Error()
		return res
	}
	dsn, ok := a.SQLProbeTargets[db]
	if !ok {
		dsn, ok = a.SQLTargets[db]
	}
	if !ok {
		res.Detail = fmt.Sprintf("no SQL target configured for database %q (TICKGATE_SQL_TARGETS)", db)
		return res
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var conn *pgx.Conn
	for backoff := 200 * time.Millisecond; ; backoff = min(2*backoff, 2*time.Second) {
		var err error
		if conn, err = pgx.Connect(cctx, dsn); err == nil {
			break
		}
		select {
		case <-cctx.Done():
			// Do not echo the DSN: a failed connect's error may contain it.
			res.Detail = fmt.Sprintf("could not connect within %s", timeout)
			return res
		case <-time.After(backoff):
		}
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var value any
	err := pgx.BeginTxFunc(cctx, conn, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := setLocalTimeouts(cctx, tx, timeout, min(a.lockTimeout(), timeout)); err != nil {
			return err
		}
		// QueryExecModeExec: the extended protocol (one statement) whatever the DSN says.
		rows, err := tx.Query(cctx, query, pgx.QueryExecModeExec)
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return err
			}
			return errNoRow
		}
		vals, err := rows.Values()
		if err != nil {
			return err
		}
		if len(vals) > 0 {
			value = vals[0]
		}
		return nil
	})
	switch {
	case errors.Is(err, errNoRow):
		res.Detail = "the probe returned no row"
	case cctx.Err() != nil:
		res.Detail = fmt.Sprintf("the probe did not answer within %s", timeout)
	case err != nil:
		res.Detail = "the probe failed: " + err.Error()
	case !truthy(value):
		res.Detail = fmt.Sprintf("the probe answered %v", value)
	default:
		res.OK = true
	}
	return res
}

var errNoRow = errors.New("no row")

// truthy: a probe's answer passes unless it is false, NULL or a zero number.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case int16:
		return x != 0
	case int32:
		return x != 0
	case int64:
		return x != 0
	case float32:
		return x != 0
	case float64:
		return x != 0
	}
	return true
}

// healthRedirects is how many redirects a health check follows, each to an address the
// outbound rule allows.
const healthRedirects = 5

// httpCheck GETs url: a 2xx answer passes. The outbound rule refuses internal addresses
// (TICKGATE_HTTP_ALLOW) after DNS resolution, and redirects to them; an address that cannot
// be reached is tried again until the timeout.
func (a *RolloutActivities) httpCheck(ctx context.Context, url string, timeout time.Duration) (res store.HealthResult) {
	res = store.HealthResult{Check: "http", Target: url}
	defer func() { res.At = time.Now().UTC() }()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := a.Outbound.NewClient(outbound.Options{Timeout: timeout, Redirects: healthRedirects})
	for backoff := 200 * time.Millisecond; ; backoff = min(2*backoff, 2*time.Second) {
		req, err := http.NewRequestWithContext(cctx, http.MethodGet, url, nil)
		if err != nil {
			res.Detail = err.Error()
			return res
		}
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body) // bounded by the client
			_ = resp.Body.Close()
			if resp.StatusCode >= 200 && resp.StatusCode < 300 {
				res.OK = true
			} else {
				res.Detail = fmt.Sprintf("GET answered %d", resp.StatusCode)
			}
			return res
		}
		if errors.Is(err, outbound.ErrRefused) {
			res.Detail = outbound.Reason(err)
			return res
		}
		select {
		case <-cctx.Done():
			res.Detail = fmt.Sprintf("no answer within %s: %v", timeout, err)
			return res
		case <-time.After(backoff):
		}
	}
}

// heartbeatEvery heartbeats the activity until stop is called (a no-op outside one).
func heartbeatEvery(ctx context.Context, every time.Duration) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}
