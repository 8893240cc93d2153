package retryafter

import "time"

// The names are case-sensitive: RFC 9110 section 5.6.7 spells them with %s"...".
var (
	shortDays = []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
	longDays  = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	months    = []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
)

// ParseHTTPDate parses an HTTP-date in any of the three formats a recipient must
// accept (RFC 9110 section 5.6.7), after trimming optional whitespace:
//
//	IMF-fixdate  Sun, 06 Nov 1994 08:49:37 GMT
//	RFC 850      Sunday, 06-Nov-94 08:49:37 GMT
//	asctime      Sun Nov  6 08:49:37 1994
//
// It is strict where time.Parse is lenient: exact field widths, case-sensitive
// names, the zone exactly "GMT" and the day within its month. The day name must
// be one of the grammar's, but it is redundant: the instant is the date and
// time, and a day name that disagrees with them is ignored, as RFC 9110 asks
// recipients to be robust where the grammar is met. Second 60 (a leap second, allowed by the grammar) is
// read as the first second of the next minute: later, never earlier.
//
// now resolves an RFC 850 two-digit year: the year with those digits that is not
// more than 50 years after now. The result is in UTC.
func ParseHTTPDate(s string, now time.Time) (time.Time, bool) {
	return parseDate(trimOWS(s), now)
}

// dateFields holds the fields of an HTTP-date as written, before validation.
type dateFields struct {
	year, month, day     int
	hour, minute, second int
	twoDigitYear         bool
}

func parseDate(s string, now time.Time) (time.Time, bool) {
	if len(s) < 4 {
		return time.Time{}, false
	}
	var f dateFields
	var ok bool
	// The character after a three-letter day name tells the format apart.
	switch s[3] {
	case ',':
		f, ok = scanIMFFixdate(s)
	case ' ':
		f, ok = scanASCTime(s)
	default:
		f, ok = scanRFC850(s)
	}
	if !ok {
		return time.Time{}, false
	}
	if f.twoDigitYear {
		f.year = fiftyYearRule(f, now)
	}
	return f.time()
}

// scanIMFFixdate reads: day-name "," SP 2DIGIT SP month SP 4DIGIT SP time-of-day SP "GMT".
func scanIMFFixdate(s string) (dateFields, bool) {
	var f dateFields
	sc := scanner{s: s, ok: true}
	sc.name(shortDays) // validated, then ignored
	sc.lit(", ")
	f.day = sc.digits(2)
	sc.lit(" ")
	f.month = sc.name(months) + 1
	sc.lit(" ")
	f.year = sc.digits(4)
	sc.lit(" ")
	sc.timeOfDay(&f)
	sc.lit(" GMT")
	return f, sc.done()
}

// scanRFC850 reads: day-name-l "," SP 2DIGIT "-" month "-" 2DIGIT SP time-of-day SP "GMT".
func scanRFC850(s string) (dateFields, bool) {
	f := dateFields{twoDigitYear: true}
	sc := scanner{s: s, ok: true}
	sc.name(longDays) // validated, then ignored
	sc.lit(", ")
	f.day = sc.digits(2)
	sc.lit("-")
	f.month = sc.name(months) + 1
	sc.lit("-")
	f.year = sc.digits(2)
	sc.lit(" ")
	sc.timeOfDay(&f)
	sc.lit(" GMT")
	return f, sc.done()
}

// scanASCTime reads: day-name SP month SP ( 2DIGIT / ( SP DIGIT ) ) SP time-of-day SP 4DIGIT.
func scanASCTime(s string) (dateFields, bool) {
	var f dateFields
	sc := scanner{s: s, ok: true}
	sc.name(shortDays) // validated, then ignored
	sc.lit(" ")
	f.month = sc.name(months) + 1
	sc.lit(" ")
	if sc.peek(' ') {
		sc.lit(" ")
		f.day = sc.digits(1)
	} else {
		f.day = sc.digits(2)
	}
	sc.lit(" ")
	sc.timeOfDay(&f)
	sc.lit(" ")
	f.year = sc.digits(4)
	return f, sc.done()
}

// fiftyYearRule resolves a two-digit year (RFC 9110 section 5.6.7): a timestamp that
// appears more than 50 years in the future means the most recent past year with the
// same digits. Of the years ending in those digits, that is the latest one whose
// timestamp is not more than 50 years after now.
func fiftyYearRule(f dateFields, now time.Time) int {
	limit := now.AddDate(50, 0, 0)
	at := func(year int) time.Time {
		return time.Date(year, time.Month(f.month), f.day, f.hour, f.minute, f.second, 0, time.UTC)
	}
	century := now.Year() - ((now.Year()%100)+100)%100 // floor, also for negative years
	year := century + f.year
	switch {
	case at(year).After(limit):
		year -= 100
	case !at(year + 100).After(limit):
		year += 100
	}
	return year
}

// time validates the ranges the grammar leaves to prose and builds the instant.
func (f dateFields) time() (time.Time, bool) {
	if f.month < 1 || f.day < 1 || f.day > daysIn(time.Month(f.month), f.year) ||
		f.hour > 23 || f.minute > 59 || f.second > 60 {
		return time.Time{}, false
	}
	date := time.Date(f.year, time.Month(f.month), f.day, 0, 0, 0, 0, time.UTC)
	tod := time.Duration(f.hour)*time.Hour + time.Duration(f.minute)*time.Minute +
		time.Duration(f.second)*time.Second
	return date.Add(tod), true
}

func daysIn(m time.Month, year int) int {
	// Day 0 of the next month is the last day of m.
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// scanner walks a date left to right; after the first mismatch ok stays false and
// every further step is a no-op, so the format functions read like the grammar.
type scanner struct {
	s  string
	ok bool
}

func (sc *scanner) lit(l string) {
	if sc.ok && len(sc.s) >= len(l) && sc.s[:len(l)] == l {
		sc.s = sc.s[len(l):]
		return
	}
	sc.ok = false
}

func (sc *scanner) peek(c byte) bool {
	return sc.ok && len(sc.s) > 0 && sc.s[0] == c
}

// digits reads exactly n ASCII digits.
func (sc *scanner) digits(n int) int {
	if !sc.ok || len(sc.s) < n {
		sc.ok = false
		return 0
	}
	v := 0
	for i := range n {
		c := sc.s[i]
		if c < '0' || c > '9' {
			sc.ok = false
			return 0
		}
		v = v*10 + int(c-'0')
	}
	sc.s = sc.s[n:]
	return v
}

// name reads one of names, case-sensitively, and returns its index (-1 on failure).
// No name in a list is a prefix of another, so the first match is the only one.
func (sc *scanner) name(names []string) int {
	if sc.ok {
		for i, n := range names {
			if len(sc.s) >= len(n) && sc.s[:len(n)] == n {
				sc.s = sc.s[len(n):]
				return i
			}
		}
	}
	sc.ok = false
	return -1
}

// timeOfDay reads hour ":" minute ":" second, two digits each.
func (sc *scanner) timeOfDay(f *dateFields) {
	f.hour = sc.digits(2)
	sc.lit(":")
	f.minute = sc.digits(2)
	sc.lit(":")
	f.second = sc.digits(2)
}

func (sc *scanner) done() bool {
	return sc.ok && sc.s == ""
}
