package schedulespec

import (
	"fmt"
	"strconv"
	"strings"
)

// The cron library reads day-of-week as 0–6 (SUN–SAT) and refuses ranges whose start lies
// after their end. crontab(5), Vixie cron and Temporal also take 7 for Sunday, so `0 9 * * 7`
// and `0 9 * * 5-7` are common; and a week is a cycle, so `FRI-MON` means Friday through
// Monday. translateDow rewrites the day-of-week field into a form the library reads with
// that meaning, before it parses the expression; the stored spec keeps what the user wrote.
//
// The rules, per comma-separated element of the field:
//   - `*`, `?` and their steps (`*/2`) are left to the library unchanged, so its "any day"
//     reading (which decides how day-of-month and day-of-week combine) is kept;
//   - an element the library already reads the same way (values 0–6, start ≤ end) is left
//     unchanged too;
//   - 7 is Sunday: `7`, `5-7`, `7/2` (= 7-7/2, Sunday alone);
//   - a range whose start lies after its end wraps around the week, by name or by number:
//     `FRI-MON` = `5-1` = Fri, Sat, Sun, Mon; `SAT-SUN` = Sat, Sun; a step counts from the
//     start across the wrap (`FRI-MON/2` = Fri, Sun);
//
// and such elements become the explicit list of their days. Anything else (8, a name the
// library does not know, a zero step) is refused here with an error that names the
// day-of-week field, rather than the library's "above maximum (6)", which would contradict
// the 0–7 this accepts.
//
// Only day-of-week wraps: an hour range such as 22-2 is refused by the library as before,
// since "the night across midnight" is two days and reads better as two elements (22-23,0-2).
func translateDow(expr string) (string, error) {
	fields := strings.Fields(expr)
	if len(fields) == 0 || strings.HasPrefix(fields[0], "@") || (len(fields) != 5 && len(fields) != 6) {
		return expr, nil // a descriptor or a wrong field count: the library says what is wrong
	}
	i := len(fields) - 1
	dow, err := translateDowField(fields[i])
	if err != nil {
		return "", err
	}
	fields[i] = dow
	return strings.Join(fields, " "), nil
}

var dowNames = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

func translateDowField(field string) (string, error) {
	elems := strings.Split(field, ",")
	for i, elem := range elems {
		out, err := translateDowElem(elem)
		if err != nil {
			return "", fmt.Errorf("day-of-week field %q: %w", field, err)
		}
		elems[i] = out
	}
	return strings.Join(elems, ","), nil
}

func translateDowElem(elem string) (string, error) {
	rangePart, stepPart, hasStep := strings.Cut(elem, "/")
	if rangePart == "*" || rangePart == "?" {
		return elem, nil
	}
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepPart)
		if err != nil || n < 1 {
			return "", fmt.Errorf("step %q of %q is not a positive number", stepPart, elem)
		}
		step = n
	}
	lowText, highText, isRange := strings.Cut(rangePart, "-")
	low, err := dowValue(lowText)
	if err != nil {
		return "", err
	}
	high := low
	switch {
	case isRange:
		if high, err = dowValue(highText); err != nil {
			return "", err
		}
	case hasStep:
		// "N/step" is "N-SAT/step" to the library; Sunday written as 7 is the end of the week.
		high = max(low, 6)
	}
	if low <= high && high <= 6 {
		return elem, nil // the library reads it the same way
	}
	if high < low {
		high += 7 // wrap around the week
	}
	var days []string
	for d := low; d <= high; d += step {
		days = append(days, strconv.Itoa(d%7))
	}
	return strings.Join(days, ","), nil
}

// dowValue reads one day: 0–7 (0 and 7 are Sunday) or a three-letter English name.
func dowValue(s string) (int, error) {
	if n, ok := dowNames[strings.ToLower(s)]; ok {
		return n, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 7 {
		return 0, fmt.Errorf("%q is not a day: use 0–7 (0 and 7 are Sunday) or SUN–SAT", s)
	}
	return n, nil
}
