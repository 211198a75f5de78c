package schedulespec

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Describe says in words when a valid spec fires, for people reading a form or a listing:
// "at minute 0 past every hour (UTC)", "every 5 minutes from 2026-01-01T00:00:00Z".
func (c *Compiled) Describe() string {
	s := c.Spec
	var out string
	if s.At != nil {
		out = "once, at " + s.At.UTC().Format(time.RFC3339Nano)
	} else if s.Interval != nil {
		out = "every " + everyDuration(s.Interval.Duration())
		if s.StartAt != nil {
			out += " from " + s.StartAt.UTC().Format(time.RFC3339)
		}
	} else {
		out = DescribeCron(s.Cron) + " (" + s.Timezone + ")"
		if s.StartAt != nil {
			out += ", from " + s.StartAt.UTC().Format(time.RFC3339)
		}
	}
	if d := s.DST; d != nil {
		if d.Repeated == RepeatedTwice {
			out += ", twice when a clock change repeats the time"
		}
		if d.Skipped == SkippedSkip {
			out += ", not at all when a clock change skips the time"
		}
	}
	if s.EndAt != nil {
		out += ", until " + s.EndAt.UTC().Format(time.RFC3339)
	}
	if s.Jitter > 0 {
		out += ", each fire delayed by up to " + time.Duration(s.Jitter).String() + " of jitter"
	}
	if len(s.ExcludeCalendars) > 0 {
		out += ", except what the calendars " + strings.Join(s.ExcludeCalendars, ", ") + " exclude"
	}
	return out
}

// everyDuration names an interval in its largest whole unit: "hour", "90 seconds", "2 days".
func everyDuration(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}} {
		if d >= u.d && d%u.d == 0 {
			return plural(int64(d/u.d), u.name)
		}
	}
	return plural(int64(d/time.Second), "second")
}

func plural(n int64, unit string) string {
	if n == 1 {
		return unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

var descriptors = map[string]string{
	"@yearly":   "at 00:00 on day-of-month 1 in January",
	"@annually": "at 00:00 on day-of-month 1 in January",
	"@monthly":  "at 00:00 on day-of-month 1",
	"@weekly":   "at 00:00 on Sunday",
	"@daily":    "at 00:00",
	"@midnight": "at 00:00",
	"@hourly":   "at minute 0 past every hour",
}

var (
	monthNames = []string{"", "January", "February", "March", "April", "May", "June", "July", "August", "September",
		"October", "November", "December"}
	dayNames = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
)

// cronField is one field of a cron expression and how to name its values.
type cronField struct {
	expr string
	unit string // "second", "minute", "hour", "day-of-month", "month", "day-of-week"
	name func(string) string
}

func (f cronField) any() bool { return f.expr == "*" || f.expr == "?" }

// single reports the field's one plain number, if it is one.
func (f cronField) single() (int, bool) {
	n, err := strconv.Atoi(f.expr)
	return n, err == nil
}

// DescribeCron says in words when a cron expression (5 fields, or 6 with seconds first, or
// a descriptor) fires, in crontab.guru's manner: "at minute 0 past every hour", "at 09:30
// on every day-of-week from Monday through Friday". An expression it cannot read is
// returned as it is.
func DescribeCron(expr string) string {
	expr = strings.TrimSpace(expr)
	if d, ok := descriptors[strings.ToLower(expr)]; ok {
		return d
	}
	parts := strings.Fields(expr)
	if len(parts) == 5 {
		parts = append([]string{"0"}, parts...)
	}
	if len(parts) != 6 {
		return expr
	}
	number := func(s string) string { return s }
	sec := cronField{parts[0], "second", number}
	min := cronField{parts[1], "minute", number}
	hour := cronField{parts[2], "hour", number}
	dom := cronField{parts[3], "day-of-month", number}
	month := cronField{parts[4], "month", func(s string) string { return valueName(s, monthNames, 1) }}
	dow := cronField{parts[5], "day-of-week", func(s string) string { return valueName(s, dayNames, 0) }}

	var words []string
	h, hOK := hour.single()
	m, mOK := min.single()
	sv, sOK := sec.single()
	switch {
	case hOK && mOK && sOK && sv == 0:
		words = append(words, fmt.Sprintf("at %02d:%02d", h, m))
	case hOK && mOK && sOK:
		words = append(words, fmt.Sprintf("at %02d:%02d:%02d", h, m, sv))
	default:
		// From the finest field to the coarsest: "at minute 0 past every hour". A field
		// left at * is named only after a specific value ("past every hour"), not after
		// "every 15th minute", which says it already.
		specific := false
		add := func(f cronField) {
			switch {
			case f.any() && len(words) == 0:
				words = append(words, "at every "+f.unit)
			case f.any():
				if specific {
					words = append(words, "past every "+f.unit)
				}
				specific = false
			default:
				d := describeField(f)
				if len(words) == 0 {
					words = append(words, "at "+d)
				} else {
					words = append(words, "past "+d)
				}
				specific = !strings.HasPrefix(d, "every")
			}
		}
		if !(sOK && sv == 0) {
			add(sec)
		}
		add(min)
		add(hour)
	}
	switch {
	case !dom.any() && !dow.any():
		// crontab(5): with both restricted, a day matching either fires.
		words = append(words, "on "+describeField(dom)+" or on "+describeField(dow))
	case !dom.any():
		words = append(words, "on "+describeField(dom))
	case !dow.any():
		words = append(words, "on "+describeField(dow))
	}
	if !month.any() {
		words = append(words, "in "+describeField(month))
	}
	return strings.Join(words, " ")
}

// describeField names a field's values: "minute 5", "minute 1, 2 and 5", "every 15th
// minute", "every hour from 9 through 17", "Monday, Wednesday and Friday".
func describeField(f cronField) string {
	named := f.unit == "month" || f.unit == "day-of-week"
	var out []string
	for _, e := range strings.Split(f.expr, ",") {
		out = append(out, describeElem(f, e, named))
	}
	joined := out[0]
	if len(out) > 1 {
		joined = strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
	}
	if _, plain := (cronField{expr: strings.Split(f.expr, ",")[0]}).single(); plain && !named {
		return f.unit + " " + joined
	}
	return joined
}

func describeElem(f cronField, e string, named bool) string {
	rng, step, hasStep := strings.Cut(e, "/")
	prefix := "every " + f.unit
	if hasStep {
		prefix = "every " + ordinal(step) + " " + f.unit
	}
	switch {
	case rng == "*" || rng == "?":
		return prefix
	case strings.Contains(rng, "-"):
		lo, hi, _ := strings.Cut(rng, "-")
		return prefix + " from " + f.name(lo) + " through " + f.name(hi)
	case hasStep:
		return prefix + " from " + f.name(rng)
	default:
		return f.name(rng)
	}
}

// valueName names a month or weekday given as a number (names[first] is the first value)
// or as its three-letter name.
func valueName(s string, names []string, first int) string {
	if n, err := strconv.Atoi(s); err == nil {
		if n >= first && n < len(names) && names[n] != "" {
			return names[n]
		}
		return s
	}
	for _, name := range names {
		if name != "" && strings.EqualFold(s, name[:3]) {
			return name
		}
	}
	return s
}

func ordinal(s string) string {
	n, err := strconv.Atoi(s)
	if err != nil {
		return s
	}
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}
