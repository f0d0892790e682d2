package frame

import (
	"fmt"
	"strings"
	"time"
)

// Date is a calendar day, counted in days since 1970-01-01 (proleptic
// Gregorian calendar, no time zone). Day 0 is 1970-01-01, day -1 is
// 1969-12-31.
//
// A day count rather than time.Time: it takes 4 bytes instead of 24, it
// compares with == and < without any location or monotonic-clock reading to
// get wrong, and a weekday is one modulo. Use Time to convert.
type Date int32

const secondsPerDay = 24 * 60 * 60

// DateOf returns the Date of the given calendar day. It does not check that
// the day exists: like time.Date, it normalises (February 30 is March 1 or 2).
func DateOf(year int, month time.Month, day int) Date {
	return Date(time.Date(year, month, day, 0, 0, 0, 0, time.UTC).Unix() / secondsPerDay)
}

// Time returns the Date as a time.Time at midnight UTC.
func (d Date) Time() time.Time {
	return time.Unix(int64(d)*secondsPerDay, 0).UTC()
}

// String formats the Date as an ISO date, 2006-01-02.
func (d Date) String() string {
	return d.Time().Format(time.DateOnly)
}

// Weekday returns the day of the week; 1970-01-01 was a Thursday.
func (d Date) Weekday() time.Weekday {
	w := (int(d) + int(time.Thursday)) % 7
	if w < 0 {
		w += 7
	}
	return time.Weekday(w)
}

// ParseDate parses an ISO date (YYYY-MM-DD, exactly two-digit month and day)
// or a US date (M/D/YYYY, one- or two-digit month and day). The year must
// have four digits and be at least 1; the day must exist in the calendar.
func ParseDate(s string) (Date, error) {
	var y, m, d int
	var ok bool
	if len(s) == 10 && s[4] == '-' && s[7] == '-' {
		y, ok = digits(s[0:4], 4, 4)
		if ok {
			m, ok = digits(s[5:7], 2, 2)
		}
		if ok {
			d, ok = digits(s[8:10], 2, 2)
		}
	} else {
		y, m, d, ok = parseUS(s)
	}
	if !ok {
		return 0, fmt.Errorf("%q is not YYYY-MM-DD or M/D/YYYY", clip(s))
	}
	if y < 1 || m < 1 || m > 12 || d < 1 || d > daysIn(time.Month(m), y) {
		return 0, fmt.Errorf("%q is not a calendar day", clip(s))
	}
	return DateOf(y, time.Month(m), d), nil
}

func parseUS(s string) (y, m, d int, ok bool) {
	ms, rest, ok1 := strings.Cut(s, "/")
	ds, ys, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 {
		return 0, 0, 0, false
	}
	if m, ok = digits(ms, 1, 2); !ok {
		return 0, 0, 0, false
	}
	if d, ok = digits(ds, 1, 2); !ok {
		return 0, 0, 0, false
	}
	if y, ok = digits(ys, 4, 4); !ok {
		return 0, 0, 0, false
	}
	return y, m, d, true
}

// digits parses an unsigned decimal of between lo and hi ASCII digits.
func digits(s string, lo, hi int) (int, bool) {
	if len(s) < lo || len(s) > hi {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(m time.Month, year int) int {
	// The day before the first of the next month.
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
