package retryafter

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// now is the fixed local clock of these tests: 2026-11-30T10:00:00Z.
var now = time.Date(2026, time.November, 30, 10, 0, 0, 0, time.UTC)

// rfcDate is the instant of RFC 9110's examples, in all three formats.
var rfcDate = time.Date(1994, time.November, 6, 8, 49, 37, 0, time.UTC)

func TestParse(t *testing.T) {
	tests := map[string]struct {
		lines   []string
		want    Source
		seconds int64
		date    time.Time
		raw     string
	}{
		// Missing: the header is absent.
		"nil lines":   {lines: nil, want: Missing},
		"empty lines": {lines: []string{}, want: Missing},

		// delta-seconds = 1*DIGIT.
		"RFC example 120":        {lines: []string{"120"}, want: DeltaSeconds, seconds: 120, raw: "120"},
		"zero":                   {lines: []string{"0"}, want: DeltaSeconds, seconds: 0, raw: "0"},
		"leading zeros":          {lines: []string{"0010"}, want: DeltaSeconds, seconds: 10, raw: "0010"},
		"OWS trimmed":            {lines: []string{" \t10\t "}, want: DeltaSeconds, seconds: 10, raw: "10"},
		"just below saturation":  {lines: []string{"2147483647"}, want: DeltaSeconds, seconds: 2147483647, raw: "2147483647"},
		"saturation bound":       {lines: []string{"2147483648"}, want: DeltaSeconds, seconds: MaxSeconds, raw: "2147483648"},
		"above saturation":       {lines: []string{"2147483649"}, want: DeltaSeconds, seconds: MaxSeconds, raw: "2147483649"},
		"beyond int64 saturates": {lines: []string{"99999999999999999999999999"}, want: DeltaSeconds, seconds: MaxSeconds, raw: "99999999999999999999999999"},
		"128 digits saturates":   {lines: []string{strings.Repeat("9", MaxRawLen)}, want: DeltaSeconds, seconds: MaxSeconds, raw: strings.Repeat("9", MaxRawLen)},

		// Numbers the grammar does not allow.
		"plus sign":           {lines: []string{"+10"}, want: Invalid, raw: "+10"},
		"minus sign":          {lines: []string{"-10"}, want: Invalid, raw: "-10"},
		"decimal point":       {lines: []string{"1.5"}, want: Invalid, raw: "1.5"},
		"exponent":            {lines: []string{"1e3"}, want: Invalid, raw: "1e3"},
		"hex":                 {lines: []string{"0x10"}, want: Invalid, raw: "0x10"},
		"unit suffix":         {lines: []string{"10s"}, want: Invalid, raw: "10s"},
		"inner space":         {lines: []string{"1 0"}, want: Invalid, raw: "1 0"},
		"arabic-indic digits": {lines: []string{"١٠"}, want: Invalid, raw: "١٠"},
		"fullwidth digits":    {lines: []string{"１０"}, want: Invalid, raw: "１０"},
		"CR is not OWS":       {lines: []string{"10\r"}, want: Invalid, raw: "10\r"},
		"NBSP is not OWS":     {lines: []string{"\u00a010"}, want: Invalid, raw: "\u00a010"},
		"vertical tab":        {lines: []string{"\v10"}, want: Invalid, raw: "\v10"},
		"empty value":         {lines: []string{""}, want: Invalid, raw: ""},
		"whitespace only":     {lines: []string{" \t "}, want: Invalid, raw: ""},
		"comma list":          {lines: []string{"10, 20"}, want: Invalid, raw: "10, 20"},
		"trailing comma":      {lines: []string{"10,"}, want: Invalid, raw: "10,"},
		"two lines":           {lines: []string{"10", "20"}, want: Invalid, raw: "10, 20"},
		"two equal lines":     {lines: []string{"10", "10"}, want: Invalid, raw: "10, 10"},
		"a date and a number": {lines: []string{"Fri, 31 Dec 1999 23:59:59 GMT", "120"}, want: Invalid, raw: "Fri, 31 Dec 1999 23:59:59 GMT, 120"},
		"over-long digits":    {lines: []string{strings.Repeat("1", MaxRawLen+1)}, want: Invalid, raw: strings.Repeat("1", MaxRawLen)},
		// OWS is not part of the field value (RFC 9110 section 5.5), so it does not
		// count towards the length bound; the value itself does.
		"long OWS around a short value": {lines: []string{" \t" + "10" + strings.Repeat(" ", MaxRawLen)}, want: DeltaSeconds, seconds: 10, raw: "10"},
		"over-long value inside OWS":    {lines: []string{" " + strings.Repeat("1", MaxRawLen+1) + " "}, want: Invalid, raw: strings.Repeat("1", MaxRawLen)},
		"exactly MaxRawLen digits":      {lines: []string{" " + strings.Repeat("0", MaxRawLen-1) + "7 "}, want: DeltaSeconds, seconds: 7, raw: strings.Repeat("0", MaxRawLen-1) + "7"},

		// Cases from other clients' suites where the RFC grammar decides.
		// urllib3 test_parse_retry_after(_invalid): "\t42 " is 42; -1, +1, 1.0 and
		// a superscript two are invalid.
		"urllib3 tab and space": {lines: []string{"\t42 "}, want: DeltaSeconds, seconds: 42, raw: "42"},
		"urllib3 +1":            {lines: []string{"+1"}, want: Invalid, raw: "+1"},
		"urllib3 1.0":           {lines: []string{"1.0"}, want: Invalid, raw: "1.0"},
		"urllib3 superscript 2": {lines: []string{"\u00b2"}, want: Invalid, raw: "\u00b2"},
		// urllib3 reads these as valid dates (email.utils is lenient); RFC 9110
		// allows neither a one-digit day in IMF-fixdate nor a zone other than GMT.
		"urllib3 one-digit day, UTC": {lines: []string{"Mon, 3 Jun 2019 12:00:00 UTC"}, want: Invalid, raw: "Mon, 3 Jun 2019 12:00:00 UTC"},
		"numeric zone offset":        {lines: []string{"Fri, 30 Oct 2015 12:30:00 +0500"}, want: Invalid, raw: "Fri, 30 Oct 2015 12:30:00 +0500"},
		"lowercase gmt":              {lines: []string{"Mon, 30 Nov 2026 10:00:10 gmt"}, want: Invalid, raw: "Mon, 30 Nov 2026 10:00:10 gmt"},
		// urllib3 strips any Python whitespace; only SP and HTAB are OWS.
		"trailing CRLF":     {lines: []string{"10\r\n"}, want: Invalid, raw: "10\r\n"},
		"form feed":         {lines: []string{"\f10"}, want: Invalid, raw: "\f10"},
		"unix timestamp":    {lines: []string{"1796032810"}, want: DeltaSeconds, seconds: 1796032810, raw: "1796032810"},
		"ms suffix":         {lines: []string{"1500ms"}, want: Invalid, raw: "1500ms"},
		"quoted number":     {lines: []string{`"10"`}, want: Invalid, raw: `"10"`},
		"empty second line": {lines: []string{"10", ""}, want: Invalid, raw: "10, "},
		// go-retryablehttp takes the first of two lines ("2", "3") as 2s; a singleton
		// field sent twice is invalid, and picking one would be a guess.
		"retryablehttp two headers": {lines: []string{"2", "3"}, want: Invalid, raw: "2, 3"},
		"retryablehttp bad date":    {lines: []string{"Fri, 32 Dec 1999 23:59:59 GMT"}, want: Invalid, raw: "Fri, 32 Dec 1999 23:59:59 GMT"},
		"two date comma list":       {lines: []string{"Sun, 06 Nov 1994 08:49:37 GMT, Sun, 06 Nov 1994 08:49:37 GMT"}, want: Invalid, raw: "Sun, 06 Nov 1994 08:49:37 GMT, Sun, 06 Nov 1994 08:49:37 GMT"},
		"not a value at all":        {lines: []string{"soon"}, want: Invalid, raw: "soon"},
		"control byte":              {lines: []string{"1\x000"}, want: Invalid, raw: "1\x000"},
		"RFC example date":          {lines: []string{"Fri, 31 Dec 1999 23:59:59 GMT"}, want: HTTPDate, date: time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC), raw: "Fri, 31 Dec 1999 23:59:59 GMT"},
		"IMF-fixdate":               {lines: []string{"Sun, 06 Nov 1994 08:49:37 GMT"}, want: HTTPDate, date: rfcDate, raw: "Sun, 06 Nov 1994 08:49:37 GMT"},
		"RFC 850":                   {lines: []string{"Sunday, 06-Nov-94 08:49:37 GMT"}, want: HTTPDate, date: rfcDate, raw: "Sunday, 06-Nov-94 08:49:37 GMT"},
		"asctime":                   {lines: []string{"Sun Nov  6 08:49:37 1994"}, want: HTTPDate, date: rfcDate, raw: "Sun Nov  6 08:49:37 1994"},
		"date with OWS":             {lines: []string{"\t Sun, 06 Nov 1994 08:49:37 GMT \t"}, want: HTTPDate, date: rfcDate, raw: "Sun, 06 Nov 1994 08:49:37 GMT"},
		"date in zone UTC":          {lines: []string{"Sun, 06 Nov 1994 08:49:37 UTC"}, want: Invalid, raw: "Sun, 06 Nov 1994 08:49:37 UTC"},
		"future date (server)":      {lines: []string{"Mon, 30 Nov 2026 10:00:10 GMT"}, want: HTTPDate, date: now.Add(10 * time.Second), raw: "Mon, 30 Nov 2026 10:00:10 GMT"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Parse(tc.lines, now)
			want := Value{Source: tc.want, Raw: tc.raw, Seconds: tc.seconds, Date: tc.date}
			if got != want {
				t.Errorf("Parse(%q) = %+v, want %+v", tc.lines, got, want)
			}
		})
	}
}

// TestParseRawIsBoundedAndValidUTF8 checks the raw value kept for status: at most
// MaxRawLen bytes, never a split UTF-8 sequence.
func TestParseRawIsBoundedAndValidUTF8(t *testing.T) {
	long := strings.Repeat("a", MaxRawLen-1) + "é" + "tail" // é straddles the cut
	for name, lines := range map[string][]string{
		"one long line":  {long},
		"many lines":     {long, long, long},
		"many short":     strings.Split(strings.Repeat("10,", 100), ","),
		"exact boundary": {strings.Repeat("b", MaxRawLen-2) + "é" + "c"},
	} {
		t.Run(name, func(t *testing.T) {
			v := Parse(lines, now)
			if v.Source != Invalid {
				t.Fatalf("Source = %s, want Invalid", v.Source)
			}
			if len(v.Raw) > MaxRawLen {
				t.Errorf("len(Raw) = %d, want <= %d", len(v.Raw), MaxRawLen)
			}
			if !strings.HasPrefix(lines[0], v.Raw[:min(len(v.Raw), len(lines[0]))]) {
				t.Errorf("Raw %q does not start with the first line", v.Raw)
			}
			if !utf8.ValidString(v.Raw) {
				t.Errorf("Raw %q is not valid UTF-8", v.Raw)
			}
		})
	}
}

func TestParseDeltaAllocatesNothing(t *testing.T) {
	for _, lines := range [][]string{{"120"}, {" 99999999999999999999 "}, {"Sun, 06 Nov 1994 08:49:37 GMT"}} {
		if n := testing.AllocsPerRun(1000, func() { Parse(lines, now) }); n != 0 {
			t.Errorf("Parse(%q) allocates %v times per run, want 0", lines, n)
		}
	}
}

func BenchmarkParseDelta(b *testing.B) {
	lines := []string{"120"}
	b.ReportAllocs()
	for b.Loop() {
		Parse(lines, now)
	}
}

func BenchmarkParseDate(b *testing.B) {
	for name, v := range map[string]string{
		"IMF-fixdate": "Sun, 06 Nov 1994 08:49:37 GMT",
		"RFC850":      "Sunday, 06-Nov-94 08:49:37 GMT",
		"asctime":     "Sun Nov  6 08:49:37 1994",
	} {
		b.Run(name, func(b *testing.B) {
			lines := []string{v}
			b.ReportAllocs()
			for b.Loop() {
				Parse(lines, now)
			}
		})
	}
}
