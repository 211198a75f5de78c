package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
)

var (
	flagHTTP       = flag.Int("http", 1000, "http-action burst: schedules whose http action posts to a receiver in the bench's process, all due at every tick, and as many native Temporal Schedules running one HTTP activity (0 skips both)")
	flagHTTPBig    = flag.Int("http-big", 10000, "big http-action burst, the last phase: schedules as -http's, tickgate only (0 skips it)")
	flagHTTPBursts = flag.Int("http-bursts", 1, "http-action bursts (both sizes): measured bursts")
	flagHTTPWarmup = flag.Int("http-warmup-bursts", 1, "http-action bursts (both sizes): bursts before the measured ones")
)

// httpBurstResult is what an engine did with the http burst: burstResult's late is the
// request's arrival at the receiver (its handler entered) − the nominal tick, per
// (schedule, measured tick); a key that never arrived is +Inf.
type httpBurstResult struct {
	burstResult
	// statuses (tickgate only) counts the measured ticks' runs by status.
	statuses map[domain.RunStatus]int
	// duplicates counts requests beyond the first of their Idempotency-Key, over every tick
	// of the phase; unkeyed, requests that carried no readable key.
	duplicates, unkeyed int
	// retried (tickgate only) counts the measured runs whose first attempt did not succeed,
	// so their delivery workflow retried them (or, lost, their sender died mid-send).
	retried int
}

// missed counts the measured (schedule, tick) pairs whose request never arrived.
func (r httpBurstResult) missed() int { return len(r.late) - r.late.fired() }

// runHTTPBurst creates n schedules on -cron whose http action posts to the receiver at path
// (overlap allow_all, catch-up window -catchup-window, the retry policy's defaults) through
// POST /api/v1/schedules/bulk, as a user creates many; waits through the bursts until every
// run of a tick is final (delivered and recorded, or failed); and reads from the receiver
// when each tick's request arrived. The schedules are paused after when pause is set (a
// later phase needs a quiet stack).
func runHTTPBurst(ctx context.Context, e *env, rcv *receiver, n int, path, prefix string, pause bool) (httpBurstResult, error) {
	res := httpBurstResult{burstResult: burstResult{schedules: n}}
	spec, compiled, err := burstSpec()
	if err != nil {
		return res, err
	}
	catchup := schedulespec.Duration(*flagCatchup)
	items := make([]api.CreateScheduleRequest, n)
	for i := range items {
		items[i] = api.CreateScheduleRequest{
			Name: fmt.Sprintf("t%02d-%s-%05d", i%50, prefix, i),
			Spec: spec,
			Action: domain.Action{Kind: domain.ActionHTTP, URL: rcv.url + path,
				Body: httpBody, Timeout: schedulespec.Duration(httpTimeout)},
			Policies: &api.SchedulePolicies{Overlap: domain.OverlapAllowAll, CatchupWindow: catchup},
		}
	}
	began := time.Now()
	if err := bulkCreate(ctx, e, items); err != nil {
		return res, err
	}
	res.created = time.Since(began)
	names := make([]string, n)
	for i, it := range items {
		names[i] = it.Name
	}
	ids, err := scheduleIDs(ctx, e.st, names)
	if err != nil {
		return res, err
	}
	who := fmt.Sprintf("tickgate http %d", n)
	ticks := planBursts(who, compiled, n, res.created, *flagHTTPWarmup+*flagHTTPBursts)
	// Polled once a second (as the native http burst is): its count of ten thousand runs is
	// work for PostgreSQL inside the measured window, and it only paces the run.
	if _, _, err := res.waitBursts(ctx, e, who, "final", ticks, *flagHTTPWarmup, n, time.Second,
		func(ctx context.Context, tick time.Time) (int, error) { return e.runs.final(ctx, ids, tick) }); err != nil {
		return res, err
	}
	keys := make([]string, n)
	for i, id := range ids {
		keys[i] = strconv.FormatInt(id, 10) // the key's schedule part (domain.TickKey)
	}
	res.late = rcv.lateness(path, keys, res.ticks)
	res.tallyBursts()
	res.duplicates, res.unkeyed = rcv.duplicates(path)
	if res.statuses, err = e.runs.statuses(ctx, ids, res.ticks); err != nil {
		return res, err
	}
	if res.retried, err = e.runs.retried(ctx, ids, res.ticks); err != nil {
		return res, err
	}
	if !pause {
		return res, nil
	}
	return res, pauseAll(ctx, e, names, "bench: http burst measured")
}

// bulkCreate creates the schedules through tickgate's API, served in this process for the
// creation only (stopped before the first tick), api.MaxBulkSchedules a request.
func bulkCreate(ctx context.Context, e *env, items []api.CreateScheduleRequest) error {
	srv := httptest.NewServer(api.New(&api.Server{Store: e.st, Temporal: e.tc, Starter: e.starter(),
		HTTPAllow: e.cfg.HTTPAllow, Logf: func(string, ...any) {}}))
	defer srv.Close()
	_, token, err := e.st.CreateToken(ctx, store.NewToken{Role: domain.RoleAdmin, Note: "bench-schedules"})
	if err != nil {
		return err
	}
	for from := 0; from < len(items); from += api.MaxBulkSchedules {
		body, err := json.Marshal(api.BulkCreateRequest{Items: items[from:min(from+api.MaxBulkSchedules, len(items))]})
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/api/v1/schedules/bulk", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		if err != nil {
			return fmt.Errorf("bulk create: %w", err)
		}
		answer, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("bulk create: HTTP %d: %s", resp.StatusCode, answer)
		}
	}
	return nil
}

// scheduleIDs are the ids of the schedules named, in their order.
func scheduleIDs(ctx context.Context, st *store.Store, names []string) ([]int64, error) {
	rows, err := st.Pool.Query(ctx, `SELECT name, id FROM schedules WHERE name = ANY($1)`, names)
	if err != nil {
		return nil, fmt.Errorf("read schedule ids: %w", err)
	}
	defer rows.Close()
	byName := map[string]int64{}
	for rows.Next() {
		var name string
		var id int64
		if err := rows.Scan(&name, &id); err != nil {
			return nil, err
		}
		byName[name] = id
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	ids := make([]int64, len(names))
	for i, name := range names {
		id, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("schedule %s: not found after its create", name)
		}
		ids[i] = id
	}
	return ids, nil
}
