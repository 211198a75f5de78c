package schedulespec

import (
	"encoding/json"
	"fmt"
)

// StoredCalendar is a calendar as the calendars table keeps it: its ranges as JSON.
type StoredCalendar struct {
	Name, Timezone string
	Dates          []string
	Ranges         []byte
}

// CompileStored compiles stored calendars, by name: the one reading of a calendars row that
// the API (a calendar's edit, the preview) and the engine (the planner, a schedule's
// workflow) share. stored gives each row's columns.
func CompileStored[R any](rows []R, stored func(R) StoredCalendar) (map[string]*CompiledCalendar, error) {
	out := make(map[string]*CompiledCalendar, len(rows))
	for _, r := range rows {
		s := stored(r)
		c := Calendar{Name: s.Name, Timezone: s.Timezone, Dates: s.Dates}
		if err := json.Unmarshal(s.Ranges, &c.Ranges); err != nil {
			return nil, fmt.Errorf("ranges of calendar %q: %w", s.Name, err)
		}
		compiled, err := NormalizeCalendar(c)
		if err != nil {
			return nil, fmt.Errorf("stored calendar %q: %w", s.Name, err)
		}
		out[s.Name] = compiled
	}
	return out, nil
}
