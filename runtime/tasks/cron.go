package tasks

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// parseCron reads a standard cron line: five fields or a descriptor
// (@hourly, @daily, @weekly, @monthly, @yearly). "@every" has no slots
// (it counts from whenever it started), and the zone has its own field.
// Day-of-week 7 is Sunday, as crontab(5) says ("0-7, 0 or 7 is Sun"),
// although robfig/cron's standard parser knows only 0-6.
func parseCron(line string) (*cron.SpecSchedule, error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return nil, fmt.Errorf("%w: cron is required: five fields, minute hour day-of-month month day-of-week, e.g. \"0 9 * * 1-5\"", ErrInvalid)
	}
	if strings.HasPrefix(line, "TZ=") || strings.HasPrefix(line, "CRON_TZ=") {
		return nil, fmt.Errorf("%w: cron %q: put the time zone in the timezone field, not in cron", ErrInvalid, clip(line, 80))
	}
	if strings.HasPrefix(line, "@every") {
		return nil, fmt.Errorf("%w: cron %q: @every is not supported; use five fields, e.g. \"*/15 * * * *\"", ErrInvalid, clip(line, 80))
	}
	sched, err := cron.ParseStandard(sundaySeven(line))
	if err != nil {
		return nil, fmt.Errorf("%w: cron %q: %s (five fields: minute hour day-of-month month day-of-week, e.g. \"0 9 * * 1-5\")", ErrInvalid, clip(line, 80), err)
	}
	spec, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("%w: cron %q is not a calendar schedule", ErrInvalid, clip(line, 80))
	}
	return spec, nil
}

// sundaySeven rewrites the day-of-week field of a five-field line so that
// robfig/cron reads 7 as Sunday: "7" becomes "0", and a range or step
// reaching 7 ("5-7", "1-7/2") becomes the list of its days with 7 as 0.
// Anything else (descriptors, other fields, a malformed item) is left for
// the parser to accept or explain.
func sundaySeven(line string) string {
	fields := strings.Fields(line)
	if len(fields) != 5 {
		return line
	}
	items := strings.Split(fields[4], ",")
	for i, item := range items {
		items[i] = sundaySevenItem(item)
	}
	fields[4] = strings.Join(items, ",")
	return strings.Join(fields, " ")
}

// sundaySevenItem rewrites one comma-separated item of the day-of-week
// field when it names 7; otherwise it returns it unchanged.
func sundaySevenItem(item string) string {
	span, stepText, hasStep := strings.Cut(item, "/")
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || n <= 0 {
			return item
		}
		step = n
	}
	lowText, highText, isRange := strings.Cut(span, "-")
	low, ok := weekday(lowText)
	if !ok {
		return item
	}
	high := low
	switch {
	case isRange:
		if high, ok = weekday(highText); !ok {
			return item
		}
	case hasStep:
		// "N/step" is N through the end of the field (crontab(5)),
		// which for this field is 7.
		high = 7
	}
	if low != 7 && high != 7 {
		return item
	}
	if low > high {
		return item // the parser names the backwards range
	}
	seen := map[int]bool{}
	var days []string
	for d := low; d <= high; d += step {
		day := d % 7 // 7 is Sunday, 0
		if !seen[day] {
			seen[day] = true
			days = append(days, strconv.Itoa(day))
		}
	}
	return strings.Join(days, ",")
}

// weekday reads a day-of-week number 0-7 or a three-letter name.
func weekday(s string) (int, bool) {
	if n, err := strconv.Atoi(s); err == nil {
		return n, n >= 0 && n <= 7
	}
	for i, name := range []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"} {
		if strings.EqualFold(s, name) {
			return i, true
		}
	}
	return 0, false
}

// NeverFires says, for a task whose schedule parses, why it has no slot
// within the five years robfig/cron looks ahead of now ("0 0 31 2 *": no
// February 31st), or "" when it fires. Such a task is valid, so a file
// that says so is not refused, but listings and the log warn about it.
func (s Schedule) NeverFires(now time.Time) string {
	if !s.Next(now).IsZero() {
		return ""
	}
	return "the schedule never fires: no date in the next five years matches its day-of-month and month " +
		"(like February 31st); fix cron, or delete the task"
}
