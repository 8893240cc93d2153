package retryafter

import (
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// imfLayout is IMF-fixdate as a time.Parse layout, used as an independent reference.
const imfLayout = "Mon, 02 Jan 2006 15:04:05 GMT"

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"120", "0", " 10 ", "+1", "1.5", "", "99999999999999999999",
		"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
		"Thu, 31 Dec 2026 23:59:60 GMT", "Mon, 30 Nov 2026 10:00:10 GMT", "10, 20",
	} {
		f.Add(s, int64(1796032800), "Mon, 30 Nov 2026 10:00:00 GMT", false)
	}
	f.Fuzz(func(t *testing.T, line string, nowUnix int64, date string, twoLines bool) {
		// Keep now within years 1970-2286 so the 50-year rule stays meaningful.
		now := time.Unix(nowUnix%10_000_000_000, 0).UTC()
		lines := []string{line}
		if twoLines {
			lines = append(lines, line)
		}
		v := Parse(lines, now)
		checkValue(t, lines, v)
		w := v.Wait(now, []string{date})
		if w < 0 {
			t.Fatalf("Wait = %v, negative", w)
		}
		if v.Source == HTTPDate {
			// The server wait is never shorter than the local reading of the date.
			if local := max(v.Date.Sub(now), 0); w < local {
				t.Fatalf("Wait = %v < Date-now = %v", w, local)
			}
			if w2 := v.Wait(now, nil); w2 != max(v.Date.Sub(now), 0) {
				t.Fatalf("Wait without Date = %v, want %v", w2, max(v.Date.Sub(now), 0))
			}
		}
		// The exported helper (used for the Date header) agrees with Parse.
		if len(lines) == 1 && len(strings.Trim(line, " \t")) <= MaxRawLen {
			if d, ok := ParseHTTPDate(line, now); ok != (v.Source == HTTPDate) || ok && !d.Equal(v.Date) {
				t.Fatalf("ParseHTTPDate(%q) = %v, %v but Parse gave %+v", line, d, ok, v)
			}
		}
	})
}

func checkValue(t *testing.T, lines []string, v Value) {
	t.Helper()
	if len(v.Raw) > MaxRawLen {
		t.Fatalf("len(Raw) = %d > %d", len(v.Raw), MaxRawLen)
	}
	if utf8.ValidString(strings.Join(lines, ", ")) && !utf8.ValidString(v.Raw) {
		t.Fatalf("Raw %q is not valid UTF-8", v.Raw)
	}
	trimmed := strings.Trim(lines[0], " \t")
	single := len(lines) == 1 && len(trimmed) <= MaxRawLen // the bound is on the value, OWS excluded
	switch v.Source {
	case Missing:
		t.Fatalf("Parse(%q) = Missing for a present header", lines)
	case DeltaSeconds:
		if !single || !allDigits(trimmed) || v.Seconds < 0 || v.Seconds > MaxSeconds {
			t.Fatalf("Parse(%q) = %+v", lines, v)
		}
		if n, err := strconv.ParseInt(trimmed, 10, 64); err == nil && min(n, MaxSeconds) != v.Seconds {
			t.Fatalf("Parse(%q).Seconds = %d, want %d", lines, v.Seconds, min(n, MaxSeconds))
		}
	case HTTPDate:
		if !single || v.Date.Location() != time.UTC {
			t.Fatalf("Parse(%q) = %+v", lines, v)
		}
		// Differential check against time.Parse for IMF-fixdate, where time.Parse is
		// at least as lenient (it knows no leap second).
		if len(trimmed) == len(imfLayout) && trimmed[3] == ',' && trimmed[23:25] != "60" {
			ref, err := time.Parse(imfLayout, trimmed)
			if err != nil || !ref.Equal(v.Date) {
				t.Fatalf("Parse(%q).Date = %v, time.Parse = %v, %v", lines, v.Date, ref, err)
			}
		}
	case Invalid:
		if single && allDigits(trimmed) {
			t.Fatalf("Parse(%q) = Invalid for a valid delta-seconds", lines)
		}
		// A canonical IMF-fixdate (what time.Format writes) must be accepted.
		if ref, err := time.Parse(imfLayout, trimmed); single && err == nil && ref.Format(imfLayout) == trimmed {
			t.Fatalf("Parse(%q) = Invalid for a canonical IMF-fixdate", lines)
		}
	default:
		t.Fatalf("Parse(%q) has unknown Source %q", lines, v.Source)
	}
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
