package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Fault kinds, as the report names them.
const (
	faultWorkerKill      = "kill -9 worker"
	faultPostgresRestart = "restart PostgreSQL (immediate stop)"
	faultTemporalRestart = "restart Temporal server"
	faultAPIKill         = "kill -9 API"
)

// plannedFault is one fault at an offset into the fault phase.
type plannedFault struct {
	at   time.Duration
	kind string
	hold time.Duration // how long a network fault stays before it is lifted
}

// planFaults spreads the worker kills at random moments over the phase and puts the server
// restarts at fixed fractions of it, apart from each other.
func planFaults(p Profile, rng *rand.Rand) []plannedFault {
	var plan []plannedFault
	span := p.FaultPhase * 9 / 10
	for i := 0; i < p.WorkerKills; i++ {
		plan = append(plan, plannedFault{at: p.FaultPhase/20 + time.Duration(rng.Int64N(int64(span))), kind: faultWorkerKill})
	}
	add := func(n int, frac float64, kind string) {
		for i := 0; i < n; i++ {
			plan = append(plan, plannedFault{at: time.Duration(float64(p.FaultPhase) * (frac + 0.05*float64(i))), kind: kind})
		}
	}
	from, step := p.RestartsFrom, p.RestartsStep
	if from == 0 {
		from, step = 0.30, 0.15
	}
	add(p.PostgresRestarts, from, faultPostgresRestart)
	add(p.APIKills, from+step, faultAPIKill)
	add(p.TemporalRestarts, from+2*step, faultTemporalRestart)
	slices.SortStableFunc(plan, func(a, b plannedFault) int { return int(a.at - b.at) })
	return plan
}

// Injected is one fault as it happened.
type Injected struct {
	Kind     string
	Target   string
	At       time.Time
	Down     time.Duration // how long the component was left down
	Recovery time.Duration // from the fault until the component served again
	Err      error         // the component did not recover
}

// injector carries out the plan against the stack.
type injector struct {
	p    Profile
	s    *stack
	pool *pgxpool.Pool
	rng  *rand.Rand
	logf func(string, ...any)
}

// run injects the plan's faults in order, starting at start; each one is recovered from
// before the next begins.
func (in *injector) run(ctx context.Context, start time.Time, plan []plannedFault) []Injected {
	var done []Injected
	for _, f := range plan {
		sleepCtx(ctx, time.Until(start.Add(f.at)))
		if ctx.Err() != nil {
			break
		}
		r := in.inject(ctx, f.kind)
		if r.Err != nil {
			in.logf("chaos: %s (%s): %v", r.Kind, r.Target, r.Err)
		} else {
			in.logf("chaos: %s (%s): down %s, recovered in %s", r.Kind, r.Target, r.Down.Round(time.Millisecond), r.Recovery.Round(time.Millisecond))
		}
		done = append(done, r)
	}
	return done
}

const recoveryTimeout = 5 * time.Minute

func (in *injector) inject(ctx context.Context, kind string) Injected {
	r := Injected{Kind: kind, At: time.Now()}
	switch kind {
	case faultWorkerKill:
		w := in.s.workers[in.rng.IntN(len(in.s.workers))]
		r.Target, r.Down = w.name, time.Duration(500+in.rng.IntN(4500))*time.Millisecond
		r.Err = w.killAndRestart(ctx, r.Down)
	case faultAPIKill:
		api := in.s.apis[in.rng.IntN(len(in.s.apis))]
		r.Target, r.Down = api.name, 2*time.Second
		r.Err = api.killAndRestart(ctx, r.Down)
	case faultPostgresRestart:
		// Down longer than one local-activity attempt window (10 s): the outage must be
		// waited out, not turned into a failed workflow.
		r.Target, r.Down = fmt.Sprintf("127.0.0.1:%d", in.s.pg.Port), 15*time.Second
		if r.Err = in.s.restartPostgres(ctx, r.Down); r.Err == nil {
			r.Err = in.waitServing(ctx, time.Now())
		}
	case faultTemporalRestart:
		r.Target, r.Down = in.s.temporal.Address(), 5*time.Second
		if r.Err = in.s.restartTemporal(ctx, r.Down); r.Err == nil {
			r.Err = in.waitServing(ctx, time.Now())
		}
	}
	r.Recovery = time.Since(r.At)
	return r
}

// waitServing waits until the product serves again after a server restart: the API is
// ready, both workers are ready, and a schedule fire has committed after back.
func (in *injector) waitServing(ctx context.Context, back time.Time) error {
	for _, p := range in.s.services() {
		if err := p.waitReady(ctx, recoveryTimeout); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(recoveryTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var fired bool
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := in.pool.QueryRow(qctx, `SELECT EXISTS (SELECT 1 FROM schedule_runs WHERE created_at > $1 AND fired_at IS NOT NULL)`, back).Scan(&fired)
		cancel()
		if err == nil && fired {
			return nil
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	return fmt.Errorf("no schedule fired within %s after the restart", recoveryTimeout)
}
