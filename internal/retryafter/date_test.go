package retryafter

import (
	"testing"
	"time"
)

func TestParseHTTPDate(t *testing.T) {
	ok := func(y int, m time.Month, d, hh, mm, ss int) time.Time {
		return time.Date(y, m, d, hh, mm, ss, 0, time.UTC)
	}
	tests := map[string]struct {
		in   string
		want time.Time // zero: must be rejected
	}{
		// RFC 9110 section 5.6.7 examples: one instant, three formats.
		"IMF-fixdate": {"Sun, 06 Nov 1994 08:49:37 GMT", rfcDate},
		"RFC 850":     {"Sunday, 06-Nov-94 08:49:37 GMT", rfcDate},
		"asctime":     {"Sun Nov  6 08:49:37 1994", rfcDate},

		"asctime two-digit day":       {"Wed Nov 16 08:49:37 1994", ok(1994, 11, 16, 8, 49, 37)},
		"asctime zero-padded day":     {"Sun Nov 06 08:49:37 1994", rfcDate},
		"OWS around is trimmed":       {" \tSun, 06 Nov 1994 08:49:37 GMT\t ", rfcDate},
		"leap day":                    {"Thu, 29 Feb 2024 00:00:00 GMT", ok(2024, 2, 29, 0, 0, 0)},
		"leap second rounds later":    {"Thu, 31 Dec 2026 23:59:60 GMT", ok(2027, 1, 1, 0, 0, 0)},
		"year 0000 is in the past":    {"Sat, 01 Jan 0000 00:00:00 GMT", ok(0, 1, 1, 0, 0, 0)},
		"year 9999":                   {"Fri, 31 Dec 9999 23:59:59 GMT", ok(9999, 12, 31, 23, 59, 59)},
		"every month name (Sep)":      {"Wed, 30 Sep 2026 00:00:00 GMT", ok(2026, 9, 30, 0, 0, 0)},
		"RFC 850 long day (Thursday)": {"Thursday, 31-Dec-26 12:00:00 GMT", ok(2026, 12, 31, 12, 0, 0)},

		// Case-sensitive names and zone.
		"lowercase day":     {"sun, 06 Nov 1994 08:49:37 GMT", time.Time{}},
		"uppercase day":     {"SUN, 06 Nov 1994 08:49:37 GMT", time.Time{}},
		"lowercase month":   {"Sun, 06 nov 1994 08:49:37 GMT", time.Time{}},
		"lowercase zone":    {"Sun, 06 Nov 1994 08:49:37 gmt", time.Time{}},
		"zone UTC":          {"Sun, 06 Nov 1994 08:49:37 UTC", time.Time{}},
		"numeric zone":      {"Sun, 06 Nov 1994 08:49:37 +0000", time.Time{}},
		"no zone":           {"Sun, 06 Nov 1994 08:49:37", time.Time{}},
		"RFC 850 lowercase": {"sunday, 06-Nov-94 08:49:37 GMT", time.Time{}},
		"asctime with zone": {"Sun Nov  6 08:49:37 1994 GMT", time.Time{}},
		"full month name":   {"Sun, 06 November 1994 08:49:37 GMT", time.Time{}},

		// Exact widths.
		"IMF one-digit day":        {"Sun, 6 Nov 1994 08:49:37 GMT", time.Time{}},
		"IMF two-digit year":       {"Sun, 06 Nov 94 08:49:37 GMT", time.Time{}},
		"IMF five-digit year":      {"Sun, 06 Nov 01994 08:49:37 GMT", time.Time{}},
		"IMF one-digit hour":       {"Sun, 06 Nov 1994 8:49:37 GMT", time.Time{}},
		"IMF double space":         {"Sun,  06 Nov 1994 08:49:37 GMT", time.Time{}},
		"IMF no space after comma": {"Sun,06 Nov 1994 08:49:37 GMT", time.Time{}},
		"IMF long day name":        {"Sunday, 06 Nov 1994 08:49:37 GMT", time.Time{}},
		"RFC 850 short day name":   {"Sun, 06-Nov-94 08:49:37 GMT", time.Time{}},
		"RFC 850 four-digit year":  {"Sunday, 06-Nov-1994 08:49:37 GMT", time.Time{}},
		"RFC 850 one-digit day":    {"Sunday, 6-Nov-94 08:49:37 GMT", time.Time{}},
		"asctime one space":        {"Sun Nov 6 08:49:37 1994", time.Time{}},
		"asctime space and 2DIGIT": {"Sun Nov  06 08:49:37 1994", time.Time{}},
		"asctime two-digit year":   {"Sun Nov  6 08:49:37 94", time.Time{}},
		"trailing garbage":         {"Sun, 06 Nov 1994 08:49:37 GMTx", time.Time{}},
		"inner tab":                {"Sun,\t06 Nov 1994 08:49:37 GMT", time.Time{}},
		"seconds fraction":         {"Sun, 06 Nov 1994 08:49:37.5 GMT", time.Time{}},
		"ISO 8601":                 {"1994-11-06T08:49:37Z", time.Time{}},
		"empty":                    {"", time.Time{}},
		"short":                    {"Sun", time.Time{}},

		// Ranges the grammar leaves to prose, and self-consistency.
		"day 00":             {"Sun, 00 Nov 1994 08:49:37 GMT", time.Time{}},
		"31 November":        {"Thu, 31 Nov 1994 08:49:37 GMT", time.Time{}},
		"29 Feb common year": {"Tue, 29 Feb 2022 00:00:00 GMT", time.Time{}},
		"hour 24":            {"Sun, 06 Nov 1994 24:00:00 GMT", time.Time{}},
		"minute 60":          {"Sun, 06 Nov 1994 08:60:00 GMT", time.Time{}},
		"second 61":          {"Sun, 06 Nov 1994 08:49:61 GMT", time.Time{}},
		"wrong day name":     {"Mon, 06 Nov 1994 08:49:37 GMT", time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC)},
		"RFC 850 wrong day":  {"Monday, 06-Nov-94 08:49:37 GMT", time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC)},
		"asctime wrong day":  {"Mon Nov  6 08:49:37 1994", time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC)},
		"asctime day 0":      {"Sun Nov  0 08:49:37 1994", time.Time{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := ParseHTTPDate(tc.in, now)
			if ok != !tc.want.IsZero() || !got.Equal(tc.want) {
				t.Errorf("ParseHTTPDate(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, !tc.want.IsZero())
			}
			if ok && got.Location() != time.UTC {
				t.Errorf("location = %v, want UTC", got.Location())
			}
		})
	}
}

// TestFiftyYearRule: an RFC 850 year that appears more than 50 years in the future
// means the most recent past year with the same two digits (RFC 9110 5.6.7).
func TestFiftyYearRule(t *testing.T) {
	const rfc850 = "Monday, 02-Jan-06 15:04:05 GMT"
	tests := map[string]struct {
		now, date time.Time
	}{
		"94 in 2026 is 1994": {
			now: now, date: rfcDate,
		},
		"26 in 2026 is this year": {
			now: now, date: time.Date(2026, 12, 31, 12, 0, 0, 0, time.UTC),
		},
		"exactly 50 years ahead is kept": {
			now: now, date: now.AddDate(50, 0, 0),
		},
		"one second more than 50 years ahead is a century back": {
			now: now, date: now.AddDate(-50, 0, 0).Add(time.Second),
		},
		"a year 60 years ahead is a century back": {
			now: now, date: time.Date(1986, 1, 1, 0, 0, 0, 0, time.UTC),
		},
		"late in a century, a small year is the next century": {
			now: time.Date(2090, 6, 1, 0, 0, 0, 0, time.UTC), date: time.Date(2110, 1, 1, 0, 0, 0, 0, time.UTC),
		},
		"late in a century, a year 50 years back stays": {
			now: time.Date(2090, 6, 1, 0, 0, 0, 0, time.UTC), date: time.Date(2041, 1, 1, 0, 0, 0, 0, time.UTC),
		},
		"29 Feb resolved into a leap year": {
			now: now, date: time.Date(1996, 2, 29, 0, 0, 0, 0, time.UTC),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := tc.date.Format(rfc850)
			got, ok := ParseHTTPDate(in, tc.now)
			if !ok || !got.Equal(tc.date) {
				t.Errorf("ParseHTTPDate(%q, now=%v) = %v, %v; want %v", in, tc.now, got, ok, tc.date)
			}
		})
	}
}
