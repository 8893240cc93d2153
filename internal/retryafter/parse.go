package retryafter

import (
	"strings"
	"time"
	"unicode/utf8"
)

// MaxSeconds is where a delta-seconds value saturates. RFC 9111 section 1.2.2 names
// 2^31 for a delta too large to represent; it is ~68 years, so it still reads as
// "far longer than any task may wait" (the planner stops with WaitBudgetExceeded),
// and MaxSeconds*time.Second fits in a time.Duration with room to spare.
const MaxSeconds int64 = 1 << 31

// Parse classifies every Retry-After line of one response. lines is nil or empty
// when the header is absent. now is read only to resolve the two-digit year of an
// RFC 850 date; Parse never reads the clock itself.
//
// Anything the grammar does not allow is Invalid rather than guessed at: several
// header lines, a comma list, an empty value, a value over MaxRawLen bytes, a
// signed or fractional number, a date in a zone other than "GMT".
func Parse(lines []string, now time.Time) Value {
	switch len(lines) {
	case 0:
		return Value{Source: Missing}
	case 1:
	default:
		// Retry-After is a singleton field; two lines are two answers, and picking
		// one would be a guess.
		return Value{Source: Invalid, Raw: joinRaw(lines)}
	}
	// The field value excludes leading and trailing OWS (RFC 9110 section 5.5), so
	// the length bound applies to what is left: "10" padded with spaces is "10".
	// Trimming is one linear pass; the parsing below only ever sees MaxRawLen bytes.
	v := trimOWS(lines[0])
	if len(v) > MaxRawLen {
		return Value{Source: Invalid, Raw: cut(v)}
	}
	if secs, ok := parseDelta(v); ok {
		return Value{Source: DeltaSeconds, Raw: v, Seconds: secs}
	}
	if t, ok := parseDate(v, now); ok {
		return Value{Source: HTTPDate, Raw: v, Date: t}
	}
	return Value{Source: Invalid, Raw: v}
}

// parseDelta accepts delta-seconds = 1*DIGIT (ASCII only) and saturates at
// MaxSeconds, so a huge value stays huge instead of wrapping to a short wait.
func parseDelta(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		// n <= MaxSeconds = 2^31 here, so n*10+9 cannot overflow an int64.
		n = min(n*10+int64(c-'0'), MaxSeconds)
	}
	return n, true
}

// trimOWS removes optional whitespace (SP and HTAB, RFC 9110 section 5.6.3) and
// nothing else: a CR, LF, NUL or Unicode space makes the value Invalid instead.
func trimOWS(s string) string {
	return strings.Trim(s, " \t")
}

// joinRaw keeps several header lines readable for status, bounded in size.
func joinRaw(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(trimOWS(l))
		if b.Len() > MaxRawLen {
			break
		}
	}
	return cut(b.String())
}

// cut bounds s to MaxRawLen bytes without splitting a UTF-8 sequence, so the raw
// value can be stored in status as it was received.
func cut(s string) string {
	if len(s) <= MaxRawLen {
		return s
	}
	n := MaxRawLen
	// Back off at most one rune's worth of continuation bytes.
	for i := 0; i < utf8.UTFMax && n > 0 && !utf8.RuneStart(s[n]); i++ {
		n--
	}
	return s[:n]
}
