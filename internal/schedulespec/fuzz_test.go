package schedulespec_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/schedulespec"
)

// FuzzSpec feeds arbitrary JSON specs through decoding, validation and fire-time
// computation. Nothing may panic, and for every spec Normalize accepts:
//   - the normalized spec is a fixed point: stored as JSON and normalized again (as the
//     schedule workflow does when it loads the row) it is the same spec with the same ticks;
//   - ticks are strictly increasing from `from`, never before start_at, never after end_at,
//     and in UTC;
//   - an interval's ticks are start_at + n·every, and the first one is the first after `from`;
//   - no tick is skipped: Prev of a tick is the tick before it (or, for the first, not
//     after `from`), and Next of that is the tick again — the workflow's skip_if_successful
//     looks up the previous run by Prev, so Prev must land on real ticks;
//   - jitter is deterministic and within [0, jitter).
func FuzzSpec(f *testing.F) {
	for _, seed := range []string{
		`{"cron":"*/5 * * * *","timezone":"Europe/Berlin"}`,
		`{"cron":"30 2 * * *","timezone":"America/New_York"}`,
		`{"cron":"30 1 * * *","timezone":"America/New_York","start_at":"2026-11-01T05:00:00Z"}`,
		`{"cron":"0 0 29 2 *"}`,
		`{"cron":"@every 90s"}`,
		`{"cron":"@daily","timezone":"Australia/Lord_Howe"}`,
		`{"cron":"CRON_TZ=Asia/Tokyo 0 9 * * 1-5"}`,
		`{"cron":"TZ=UTC CRON_TZ=Asia/Tokyo 0 9 * * *"}`,
		`{"cron":"*/7 * * * * *","jitter":"3s"}`,
		`{"cron":"0 12 * * *","start_at":"2026-01-01T12:00:00Z","end_at":"2026-01-03T12:00:00Z"}`,
		`{"interval":"90s","start_at":"2026-01-01T00:00:07Z","end_at":"2026-01-02T00:00:00Z"}`,
		`{"interval":{"every":3,"unit":"DAYS"},"timezone":"Europe/Berlin"}`,
		`{"interval":{"every":1,"unit":"hours","start_at":"2026-01-01T00:00:00Z"}}`,
		`{"interval":{"every":-1,"unit":"SECONDS"}}`,
		`{"interval":"1ns"}`,
		`{"interval":"2562047h","start_at":"1970-01-01T00:00:00Z"}`,
		`{"cron":"61 * * * *"}`,
		// Day-of-week 7 (Sunday) and ranges that wrap the week, across a DST change too.
		`{"cron":"0 9 * * 7","timezone":"Europe/Berlin"}`,
		`{"cron":"30 2 * * 5-7","timezone":"America/New_York","start_at":"2026-03-05T00:00:00Z"}`,
		`{"cron":"0 0 9 13 * 7"}`,
		`{"cron":"*/20 1 * * FRI-MON/2","timezone":"America/New_York"}`,
		`{"cron":"0 9 * * 8"}`,
		`{"cron":"0 9 * * SUN-XYZ"}`,
		// DST policies at both transitions, and ones refused.
		`{"cron":"*/15 1-3 * * *","timezone":"Europe/Berlin","dst":{"repeated":"twice","skipped":"skip"}}`,
		`{"cron":"30 2 * * *","timezone":"America/New_York","dst":{"skipped":"skip"}}`,
		`{"cron":"30 1 * * *","timezone":"America/New_York","dst":{"repeated":"twice"},"start_at":"2026-11-01T05:00:00Z"}`,
		`{"cron":"@daily","timezone":"Australia/Lord_Howe","dst":{"repeated":"twice","skipped":"skip"}}`,
		`{"cron":"* * * * * *","timezone":"Europe/Berlin","dst":{"repeated":"twice"}}`,
		`{"cron":"0 9 * * *","dst":{"repeated":"thrice"}}`,
		`{"interval":"1h","dst":{}}`,
		`{}`,
	} {
		f.Add(seed, int64(1767225600))
	}
	f.Add(`{"interval":"1s","start_at":"2199-12-31T23:59:59Z"}`, int64(7258118399))
	f.Add(`{"cron":"* * * * * *","end_at":"1970-01-01T00:00:01Z"}`, int64(-1))
	f.Fuzz(func(t *testing.T, raw string, unix int64) {
		var s schedulespec.Spec
		if json.Unmarshal([]byte(raw), &s) != nil {
			return
		}
		// Whole seconds from the low bits (as the corpus was recorded), nanoseconds from the
		// high ones: ticks must not care whether `from` is on a second.
		from := time.Unix(unix%(1<<33), int64(uint64(unix)>>33)%1e9).UTC()
		// Normalize's clock (an interval's default start_at) is a real time, between 1970 and
		// 2200 like start_at itself; ticks are asked from anywhere (a watermark, a backfill).
		now := from
		if lo, hi := time.Unix(0, 0), time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC); now.Before(lo) || now.After(hi) {
			now = lo.Add(time.Duration(uint64(unix) % uint64(hi.Sub(lo))))
		}
		c, err := schedulespec.Normalize(s, now)
		if err != nil {
			var fe *schedulespec.FieldError
			require.ErrorAs(t, err, &fe, "Normalize errors are *FieldError")
			require.NotEmpty(t, fe.Field)
			require.NotEmpty(t, fe.Detail)
			return
		}
		ticks := c.NextN(from, 5)
		requireFixedPoint(t, c, now, from, ticks)

		prev := from
		for i, tick := range ticks {
			require.True(t, tick.After(prev), "tick %s not after %s for %s", tick, prev, raw)
			require.Equal(t, time.UTC, tick.Location(), "tick %s", tick)
			if c.Spec.StartAt != nil {
				require.False(t, tick.Before(*c.Spec.StartAt), "tick %s before start_at %s", tick, *c.Spec.StartAt)
			}
			if c.Spec.EndAt != nil {
				require.False(t, tick.After(*c.Spec.EndAt), "tick %s after end_at %s", tick, *c.Spec.EndAt)
			}
			if c.Spec.Interval != nil {
				// Anchored arithmetic: start_at + n·every, and no tick of the grid in (prev, tick).
				every, start := c.Spec.Interval.Duration(), *c.Spec.StartAt
				require.Zero(t, tick.Sub(start)%every, "tick %s is off the grid of %s from %s", tick, every, start)
				require.True(t, tick.Equal(start) || !tick.Add(-every).After(prev),
					"tick %s skipped %s (after %s)", tick, tick.Add(-every), prev)
			}
			// Prev looks back at most 400 days; a sparser spec may find nothing, which is fine.
			if p := c.Prev(tick); !p.IsZero() {
				require.True(t, p.Before(tick), "Prev(%s) = %s", tick, p)
				require.False(t, p.After(prev), "Prev(%s) = %s: a tick between %s and it was skipped (%s)", tick, p, prev, raw)
				if i > 0 {
					require.Equal(t, prev, p, "Prev(%s) is not the tick before it (%s)", tick, raw)
				}
				require.Equal(t, tick, c.Next(p), "Next(Prev(%s)) (%s)", tick, raw)
			}
			j := c.JitterFor("s", tick)
			require.Equal(t, j, c.JitterFor("s", tick), "jitter is deterministic")
			if c.Spec.Jitter > 0 {
				require.True(t, j >= 0 && j < time.Duration(c.Spec.Jitter), "jitter %s outside [0, %s)", j, time.Duration(c.Spec.Jitter))
			} else {
				require.Zero(t, j)
			}
			prev = tick
		}
	})
}

// requireFixedPoint asserts that c's spec, stored as JSON and normalized again later (as
// the workflow loads it from the row, with the row's creation time), is the same spec with
// the same ticks: a spec the API accepts is one its workflow can run.
func requireFixedPoint(t *testing.T, c *schedulespec.Compiled, now, from time.Time, ticks []time.Time) {
	t.Helper()
	stored, err := json.Marshal(c.Spec)
	require.NoError(t, err)
	var s schedulespec.Spec
	require.NoError(t, json.Unmarshal(stored, &s), "stored spec %s", stored)
	again, err := schedulespec.Normalize(s, now.Add(time.Hour))
	require.NoError(t, err, "stored spec %s no longer validates", stored)
	require.Equal(t, c.Spec, again.Spec, "stored spec %s normalizes differently", stored)
	require.Equal(t, ticks, again.NextN(from, len(ticks)), "stored spec %s ticks differently", stored)
}
