package schedulespec_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tickgate/tickgate/internal/schedulespec"
)

// FuzzSpec feeds arbitrary JSON specs through decoding, validation and fire-time
// computation: nothing may panic, and every computed tick must be strictly after the time
// it was computed from, inside end_at.
func FuzzSpec(f *testing.F) {
	for _, seed := range []string{
		`{"cron":"*/5 * * * *","timezone":"Europe/Berlin"}`,
		`{"cron":"30 2 * * *","timezone":"America/New_York"}`,
		`{"cron":"0 0 29 2 *"}`,
		`{"cron":"@every 90s"}`,
		`{"cron":"CRON_TZ=Asia/Tokyo 0 9 * * 1-5"}`,
		`{"cron":"*/7 * * * * *","jitter":"3s"}`,
		`{"interval":"90s","start_at":"2026-01-01T00:00:07Z","end_at":"2026-01-02T00:00:00Z"}`,
		`{"interval":{"every":3,"unit":"DAYS"}}`,
		`{"interval":{"every":-1,"unit":"SECONDS"}}`,
		`{"interval":"1ns"}`,
		`{"cron":"61 * * * *"}`,
		`{}`,
	} {
		f.Add(seed, int64(1767225600))
	}
	f.Fuzz(func(t *testing.T, raw string, unix int64) {
		var s schedulespec.Spec
		if json.Unmarshal([]byte(raw), &s) != nil {
			return
		}
		from := time.Unix(unix%(1<<33), 0).UTC()
		c, err := schedulespec.Normalize(s, from)
		if err != nil {
			return
		}
		ticks := c.NextN(from, 5)
		prev := from
		for _, tick := range ticks {
			if !tick.After(prev) {
				t.Fatalf("tick %s not after %s for %s", tick, prev, raw)
			}
			if c.Spec.EndAt != nil && tick.After(*c.Spec.EndAt) {
				t.Fatalf("tick %s after end_at %s", tick, *c.Spec.EndAt)
			}
			if j := c.JitterFor("s", tick); j < 0 || (c.Spec.Jitter > 0 && j >= time.Duration(c.Spec.Jitter)) {
				t.Fatalf("jitter %s outside [0, %s)", j, time.Duration(c.Spec.Jitter))
			}
			prev = tick
		}
	})
}
