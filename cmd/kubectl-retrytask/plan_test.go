package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// clock is the fixed "current time" the tests hand to run, the default for --now.
var clock = time.Date(2026, time.November, 30, 10, 0, 0, 0, time.UTC)

// base is a 429 received at 10:00:00 by a task with a 10:10:00 deadline.
var base = []string{"plan", "--status", "429", "--now", "2026-11-30T10:00:00Z", "--deadline", "2026-11-30T10:10:00Z", "-o", "json"}

// withBase is base followed by extra, in a fresh slice.
func withBase(extra ...string) []string { return slices.Concat(base, extra) }

func runArgs(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, clock, &out, &errb)
	return code, out.String(), errb.String()
}

func TestPlanJSON(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"the documented example": {
			args: []string{"--retry-after", "10"},
			want: `{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"DeltaSeconds","delaySeconds":10,"readyAt":"2026-11-30T10:00:10Z"}`,
		},
		"--flag=value form": {
			args: []string{"--retry-after=10", "--output=json"},
			want: `{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"DeltaSeconds","delaySeconds":10,"readyAt":"2026-11-30T10:00:10Z"}`,
		},
		"an HTTP-date": {
			args: []string{"--retry-after", "Mon, 30 Nov 2026 10:00:30 GMT"},
			want: `{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"HTTPDate","delaySeconds":30,"readyAt":"2026-11-30T10:00:30Z"}`,
		},
		"an HTTP-date with a local clock ahead of the server's Date": {
			args: []string{"--retry-after", "Mon, 30 Nov 2026 10:00:30 GMT", "--date", "Mon, 30 Nov 2026 09:59:50 GMT"},
			want: `{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"HTTPDate","delaySeconds":40,"readyAt":"2026-11-30T10:00:40Z"}`,
		},
		"a past HTTP-date is a zero wait": {
			args: []string{"--retry-after", "Sun, 06 Nov 1994 08:49:37 GMT"},
			want: `{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"HTTPDate","delaySeconds":0,"readyAt":"2026-11-30T10:00:00Z"}`,
		},
		"a later readyAt is kept": {
			args: []string{"--retry-after", "10", "--ready-at", "2026-11-30T10:00:45.5Z"},
			want: `{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"DeltaSeconds","delaySeconds":45.5,"readyAt":"2026-11-30T10:00:45.5Z"}`,
		},
		"an empty header is invalid": {
			args: []string{"--retry-after", ""},
			want: `{"decision":"Stop","reason":"InvalidRetryAfter","retryAfterSource":"Invalid"}`,
		},
		"two header lines are invalid": {
			args: []string{"--retry-after", "10", "--retry-after", "10"},
			want: `{"decision":"Stop","reason":"InvalidRetryAfter","retryAfterSource":"Invalid"}`,
		},
		"a negative number is invalid": {
			args: []string{"--retry-after", "-5"},
			want: `{"decision":"Stop","reason":"InvalidRetryAfter","retryAfterSource":"Invalid"}`,
		},
		"over maxWait stops": {
			args: []string{"--retry-after", "120"},
			want: `{"decision":"Stop","reason":"WaitBudgetExceeded","retryAfterSource":"DeltaSeconds"}`,
		},
		"over a custom maxWait escalates when listed": {
			args: []string{"--retry-after", "10", "--max-wait", "5", "--escalate-on", "WaitBudgetExceeded,DeadlineExhausted"},
			want: `{"decision":"Escalate","reason":"WaitBudgetExceeded","retryAfterSource":"DeltaSeconds"}`,
		},
		"a wait past the deadline stops": {
			args: []string{"--retry-after", "60", "--deadline", "2026-11-30T10:00:30Z"},
			want: `{"decision":"Stop","reason":"DeadlineExhausted","retryAfterSource":"DeltaSeconds"}`,
		},
		"exhausted attempts stop": {
			args: []string{"--retry-after", "10", "--attempts", "3"},
			want: `{"decision":"Stop","reason":"AttemptBudgetExhausted","retryAfterSource":"DeltaSeconds"}`,
		},
		"a larger budget allows attempt 3": {
			args: []string{"--retry-after", "10", "--attempts", "3", "--max-attempts", "4"},
			want: `{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"DeltaSeconds","delaySeconds":10,"readyAt":"2026-11-30T10:00:10Z"}`,
		},
		"not safe to retry": {
			args: []string{"--retry-after", "10", "--safe-to-retry=false"},
			want: `{"decision":"Stop","reason":"RetryNotAuthorized","retryAfterSource":"DeltaSeconds"}`,
		},
		"missing header with fallback stop": {
			args: []string{"--fallback", "stop"},
			want: `{"decision":"Stop","reason":"RetryAfterMissing","retryAfterSource":"Missing"}`,
		},
		"missing header with fallback escalate": {
			args: []string{"--fallback", "escalate"},
			want: `{"decision":"Escalate","reason":"RetryAfterMissing","retryAfterSource":"Missing"}`,
		},
		"503 is not retried unless listed": {
			args: []string{"--status", "503", "--retry-after", "10"},
			want: `{"decision":"Stop","reason":"NonRetryableStatus"}`,
		},
		"503 listed": {
			args: []string{"--status", "503", "--retry-after", "10", "--retry-on", "429,503"},
			want: `{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"DeltaSeconds","delaySeconds":10,"readyAt":"2026-11-30T10:00:10Z"}`,
		},
		"success": {
			args: []string{"--status", "200"},
			want: `{"decision":"Succeed"}`,
		},
		"unknown outcome is reconciled, even with a 429 header": {
			args: []string{"--outcome", "unknown", "--retry-after", "1"},
			want: `{"decision":"Reconcile"}`,
		},
		"another attempt in flight: the event is ignored": {
			args: []string{"--retry-after", "10", "--active"},
			want: `{"decision":"Ignore"}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runArgs(t, withBase(tc.args...)...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if out != tc.want+"\n" {
				t.Errorf("stdout =\n%s\nwant\n%s", out, tc.want)
			}
		})
	}
}

// TestPlanBackoffJSON: a local backoff is jittered, so delaySeconds is a fraction
// of the cap; the same seed gives the same answer.
func TestPlanBackoffJSON(t *testing.T) {
	decode := func(args ...string) map[string]any {
		t.Helper()
		code, out, errOut := runArgs(t, withBase(args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("stdout %q: %v", out, err)
		}
		return m
	}
	for name, tc := range map[string]struct {
		args   []string
		reason string
		source any
		cap    float64
	}{
		"missing header":        {nil, "FallbackBackoff", "Missing", 1},
		"missing, attempt 3":    {[]string{"--attempts", "3", "--max-attempts", "5"}, "FallbackBackoff", "Missing", 4},
		"custom fallback delay": {[]string{"--fallback-initial", "20", "--fallback-max", "25", "--attempts", "2"}, "FallbackBackoff", "Missing", 25},
		"not sent":              {[]string{"--outcome", "not-sent"}, "NotSent", nil, 1},
	} {
		t.Run(name, func(t *testing.T) {
			m := decode(tc.args...)
			if m["decision"] != "Wait" || m["reason"] != tc.reason || m["retryAfterSource"] != tc.source {
				t.Fatalf("got %v", m)
			}
			delay, _ := m["delaySeconds"].(float64)
			if delay < 0 || delay >= tc.cap {
				t.Errorf("delaySeconds = %v, want in [0, %v)", delay, tc.cap)
			}
			readyAt, err := time.Parse(time.RFC3339Nano, m["readyAt"].(string))
			if err != nil || !readyAt.Equal(clock.Add(time.Duration(delay*float64(time.Second)))) {
				t.Errorf("readyAt %v does not match delaySeconds %v (%v)", m["readyAt"], delay, err)
			}
			if again := decode(tc.args...); again["readyAt"] != m["readyAt"] {
				t.Errorf("same seed, different answer: %v then %v", m["readyAt"], again["readyAt"])
			}
		})
	}
	if a, b := decode("--seed", "1"), decode("--seed", "2"); a["readyAt"] == b["readyAt"] {
		t.Errorf("seeds 1 and 2 gave the same jitter %v", a["readyAt"])
	}
}

func TestPlanText(t *testing.T) {
	args := []string{"plan", "--status=429", "--retry-after=10", "--now=2026-11-30T10:00:00Z", "--deadline=2026-11-30T10:10:00Z"}
	for _, extra := range [][]string{nil, {"-o", "text"}, {"--output", "text"}} {
		code, out, _ := runArgs(t, slices.Concat(args, extra)...)
		want := "Wait until 2026-11-30T10:00:10Z (10s): the server answered 429 with Retry-After \"10\".\n"
		if code != 0 || out != want {
			t.Errorf("%v: exit %d, stdout %q; want %q", extra, code, out, want)
		}
	}
}

// TestPlanNowDefaultsToTheClock: without --now the current time is used.
func TestPlanNowDefaultsToTheClock(t *testing.T) {
	code, out, errOut := runArgs(t, "plan", "--status", "429", "--retry-after", "10", "--deadline", "2026-11-30T10:10:00Z", "-o", "json")
	if code != 0 || !strings.Contains(out, `"readyAt":"2026-11-30T10:00:10Z"`) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestPlanUsageErrors(t *testing.T) {
	tests := map[string]struct {
		args    []string
		mention string // stderr must mention this
	}{
		"no command":                   {[]string{}, "Usage"},
		"unknown command":              {[]string{"resolve"}, `unknown command "resolve"`},
		"unknown flag":                 {[]string{"plan", "--bogus"}, "bogus"},
		"missing status":               {[]string{"plan", "--deadline", "2026-11-30T10:10:00Z"}, "--status is required"},
		"missing deadline":             {[]string{"plan", "--status", "429"}, "--deadline is required"},
		"bad status":                   {[]string{"plan", "--status", "abc", "--deadline", "2026-11-30T10:10:00Z"}, "status"},
		"status out of range":          {[]string{"plan", "--status", "99", "--deadline", "2026-11-30T10:10:00Z"}, "100-599"},
		"bad deadline":                 {[]string{"plan", "--status", "429", "--deadline", "tomorrow"}, "RFC 3339"},
		"bad now":                      {withBase("--now", "2026-11-30 10:00:00"), "RFC 3339"},
		"bad ready-at":                 {withBase("--ready-at", "soon"), "ready-at"},
		"zero attempts":                {withBase("--attempts", "0"), "at least 1"},
		"bad max-attempts":             {withBase("--max-attempts", "three"), "max-attempts"},
		"negative max-wait":            {withBase("--max-wait", "-1"), "whole seconds"},
		"fractional max-wait":          {withBase("--max-wait", "1.5"), "whole seconds"},
		"huge fallback-max":            {withBase("--fallback-max", "99999999999999"), "whole seconds"},
		"bad fallback-initial":         {withBase("--fallback-initial", "x"), "fallback-initial"},
		"a 4xx in retry-on":            {withBase("--retry-on", "429,404"), "404"},
		"garbage in retry-on":          {withBase("--retry-on", "429,,503"), "retryable status"},
		"bad fallback":                 {withBase("--fallback", "retry"), "backoff, stop or escalate"},
		"bad escalate-on":              {withBase("--escalate-on", "Timeout"), "not a stop reason"},
		"bad output":                   {withBase("-o", "yaml"), "json or text"},
		"bad seed":                     {withBase("--seed", "-1"), "seed"},
		"bad outcome":                  {withBase("--outcome", "timeout"), "not-sent"},
		"bad bool":                     {withBase("--safe-to-retry=maybe"), "safe-to-retry"},
		"bool with a space":            {withBase("--safe-to-retry", "false"), "--name=false"},
		"stray argument":               {withBase("now"), `unexpected argument "now"`},
		"retry-after needs text":       {withBase("--retry-after"), "retry-after"},
		"a 4xx in a repeated retry-on": {withBase("--retry-on", "502", "--retry-on", "404"), "404"},
		"-ojson takes no value":        {withBase("-ojson=false"), "-o json"},
		"zero max-attempts":            {withBase("--max-attempts", "0"), "at least 1"},
		"negative attempts":            {withBase("--attempts", "-1"), "at least 1"},
		"status 600":                   {withBase("--status", "600"), "100-599"},
		"date-only deadline":           {[]string{"plan", "--status", "429", "--deadline", "2026-11-30"}, "RFC 3339"},
		"-o without a value":           {withBase("-o"), "-o"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runArgs(t, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			if !strings.Contains(errOut, tc.mention) {
				t.Errorf("stderr %q does not mention %q", errOut, tc.mention)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"plan", "--help"}, {"plan", "-h"}} {
		code, out, errOut := runArgs(t, args...)
		if code != 0 || !strings.Contains(out, "kubectl retrytask plan") || errOut != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	_, out, _ := runArgs(t, "plan", "--help")
	for _, flag := range []string{"--status", "--outcome", "--retry-after", "--date", "--now", "--attempts", "--max-attempts",
		"--max-wait", "--deadline", "--ready-at", "--active", "--safe-to-retry", "--retry-on", "--fallback",
		"--fallback-initial", "--fallback-max", "--escalate-on", "--seed", "-o"} {
		if !strings.Contains(out, flag+" ") && !strings.Contains(out, flag+"=") && !strings.Contains(out, flag+",") {
			t.Errorf("plan --help does not document %s", flag)
		}
	}
}

func TestPlanEmptyLists(t *testing.T) {
	code, out, _ := runArgs(t, withBase("--status", "503", "--retry-on", "", "--escalate-on", "")...)
	if want := `{"decision":"Stop","reason":"NonRetryableStatus"}` + "\n"; code != 0 || out != want {
		t.Errorf("exit %d, stdout %q; want %q", code, out, want)
	}
}

type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("pipe closed") }

// TestPlanWriteError: a decision that cannot be printed is not a success.
func TestPlanWriteError(t *testing.T) {
	var errb bytes.Buffer
	if code := run(withBase("--retry-after", "10"), clock, brokenWriter{}, &errb); code != 1 || !strings.Contains(errb.String(), "pipe closed") {
		t.Errorf("exit %d, stderr %q; want 1 and the write error", code, errb.String())
	}
}

// TestPlanRFCAndClientSuites runs the CLI contract over RFC 9110 cases and over
// cases from other clients' Retry-After suites; where a suite disagrees with the
// RFC the RFC wins, and the comment says so.
func TestPlanRFCAndClientSuites(t *testing.T) {
	const (
		invalid  = `{"decision":"Stop","reason":"InvalidRetryAfter","retryAfterSource":"Invalid"}`
		tooLong  = `{"decision":"Stop","reason":"WaitBudgetExceeded","retryAfterSource":"DeltaSeconds"}`
		deadline = `{"decision":"Stop","reason":"DeadlineExhausted","retryAfterSource":"DeltaSeconds"}`
		wait10   = `{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"DeltaSeconds","delaySeconds":10,"readyAt":"2026-11-30T10:00:10Z"}`
		date30   = `{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"HTTPDate","delaySeconds":30,"readyAt":"2026-11-30T10:00:30Z"}`
		pastDate = `{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"HTTPDate","delaySeconds":0,"readyAt":"2026-11-30T10:00:00Z"}`
	)
	// urllib3's test_respect_retry_after_header_sleep clock and a budget that fits.
	urllib3 := []string{"--status", "503", "--retry-on", "503", "--now", "2019-06-03T11:00:00Z", "--deadline", "2019-06-03T13:00:00Z", "--max-wait", "3600"}
	urllib3Wait := `{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"HTTPDate","delaySeconds":1812,"readyAt":"2019-06-03T11:30:12Z"}`
	// go-retryablehttp's TestParseRetryAfterHeader clock.
	retryable := []string{"--now", "1999-12-31T23:59:57Z", "--deadline", "2000-01-01T00:00:00Z"}
	tests := map[string]struct {
		args []string
		want string
	}{
		// delta-seconds = 1*DIGIT, OWS trimmed.
		"OWS around seconds":     {[]string{"--retry-after", " \t10\t "}, wait10},
		"leading zeros":          {[]string{"--retry-after", "00010"}, wait10},
		"zero":                   {[]string{"--retry-after", "0"}, `{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"DeltaSeconds","delaySeconds":0,"readyAt":"2026-11-30T10:00:00Z"}`},
		"plus sign":              {[]string{"--retry-after", "+5"}, invalid},
		"minus sign":             {[]string{"--retry-after", "-1"}, invalid},
		"fraction":               {[]string{"--retry-after", "1.5"}, invalid},
		"exponent":               {[]string{"--retry-after", "1e3"}, invalid},
		"inner space":            {[]string{"--retry-after", "1 0"}, invalid},
		"comma list":             {[]string{"--retry-after", "10, 20"}, invalid},
		"CRLF is not OWS":        {[]string{"--retry-after", "10\r\n"}, invalid},
		"over 128 bytes":         {[]string{"--retry-after", strings.Repeat("1", 129)}, invalid},
		"huge saturates":         {[]string{"--retry-after", "99999999999999999999999999"}, tooLong},
		"huge under a vast wait": {[]string{"--retry-after", "99999999999999999999999999", "--max-wait", "2147483648", "--deadline", "9999-12-31T00:00:00Z"}, tooLong},
		"several lines":          {[]string{"--retry-after", "10", "--retry-after", "20"}, invalid},

		// HTTP-date: all three formats, GMT only, case-sensitive.
		"IMF-fixdate":     {[]string{"--retry-after", "Mon, 30 Nov 2026 10:00:30 GMT"}, date30},
		"RFC 850":         {[]string{"--retry-after", "Monday, 30-Nov-26 10:00:30 GMT"}, date30},
		"asctime":         {[]string{"--retry-after", "Mon Nov 30 10:00:30 2026"}, date30},
		"date with OWS":   {[]string{"--retry-after", "\t Mon, 30 Nov 2026 10:00:30 GMT "}, date30},
		"lowercase gmt":   {[]string{"--retry-after", "Mon, 30 Nov 2026 10:00:30 gmt"}, invalid},
		"zone UTC":        {[]string{"--retry-after", "Mon, 30 Nov 2026 10:00:30 UTC"}, invalid},
		"numeric zone":    {[]string{"--retry-after", "Mon, 30 Nov 2026 11:00:30 +0100"}, invalid},
		"lowercase month": {[]string{"--retry-after", "Mon, 30 nov 2026 10:00:30 GMT"}, invalid},
		"RFC 850, 50-year rule: 94 is 1994, a past date": {[]string{"--retry-after", "Sunday, 06-Nov-94 08:49:37 GMT"}, pastDate},
		"asctime in the past":                            {[]string{"--retry-after", "Sun Nov  6 08:49:37 1994"}, pastDate},
		"past date and a server Date behind us": {
			[]string{"--retry-after", "Mon, 30 Nov 2026 09:59:58 GMT", "--date", "Mon, 30 Nov 2026 09:59:55 GMT"},
			`{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"HTTPDate","delaySeconds":3,"readyAt":"2026-11-30T10:00:03Z"}`,
		},
		"an invalid Date header is ignored":         {[]string{"--retry-after", "Mon, 30 Nov 2026 10:00:30 GMT", "--date", "Mon, 30 Nov 2026 09:00:00 UTC"}, date30},
		"a Date header does not move delta-seconds": {[]string{"--retry-after", "10", "--date", "Mon, 30 Nov 2026 09:00:00 GMT"}, wait10},

		// readyAt and the deadline.
		"readyAt equal to the deadline stops":             {[]string{"--retry-after", "10", "--deadline", "2026-11-30T10:00:10Z"}, deadline},
		"readyAt a microsecond before the deadline waits": {[]string{"--retry-after", "10", "--deadline", "2026-11-30T10:00:10.000001Z"}, wait10},
		"now equal to the deadline stops":                 {[]string{"--retry-after", "0", "--deadline", "2026-11-30T10:00:00Z"}, deadline},
		"readyAt rounds up to the microsecond": {
			[]string{"--retry-after", "10", "--now", "2026-11-30T10:00:00.0000001Z"},
			`{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"DeltaSeconds","delaySeconds":10.0000009,"readyAt":"2026-11-30T10:00:10.000001Z"}`,
		},
		"an earlier --ready-at is replaced":  {[]string{"--retry-after", "10", "--ready-at", "2026-11-30T10:00:05Z"}, wait10},
		"a --ready-at at the deadline stops": {[]string{"--retry-after", "1", "--ready-at", "2026-11-30T10:10:00Z"}, deadline},

		// Attempts.
		"attempts over the budget stop": {[]string{"--retry-after", "10", "--attempts", "7"}, `{"decision":"Stop","reason":"AttemptBudgetExhausted","retryAfterSource":"DeltaSeconds"}`},
		"one attempt allowed":           {[]string{"--retry-after", "10", "--max-attempts", "1"}, `{"decision":"Stop","reason":"AttemptBudgetExhausted","retryAfterSource":"DeltaSeconds"}`},
		"not sent with the budget used": {[]string{"--outcome", "not-sent", "--attempts", "3"}, `{"decision":"Stop","reason":"AttemptBudgetExhausted"}`},
		"unknown with the budget used":  {[]string{"--outcome", "unknown", "--attempts", "3"}, `{"decision":"Reconcile"}`},

		// Flags.
		"repeated --retry-on adds":    {[]string{"--status", "503", "--retry-after", "10", "--retry-on", "502", "--retry-on", "503"}, wait10},
		"repeated --escalate-on adds": {[]string{"--retry-after", "10", "--max-wait", "5", "--escalate-on", "DeadlineExhausted", "--escalate-on", "WaitBudgetExceeded"}, `{"decision":"Escalate","reason":"WaitBudgetExceeded","retryAfterSource":"DeltaSeconds"}`},
		"kubectl's -ojson":            {[]string{"-o", "text", "--retry-after", "10", "-ojson"}, wait10},

		// urllib3 test_retry.py (RFC 7231 section 7.1.1.1 formats at 11:00:00).
		"urllib3 seconds":       {slices.Concat(urllib3, []string{"--retry-after", "3600"}), `{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"DeltaSeconds","delaySeconds":3600,"readyAt":"2019-06-03T12:00:00Z"}`},
		"urllib3 IMF-fixdate":   {slices.Concat(urllib3, []string{"--retry-after", "Mon, 03 Jun 2019 11:30:12 GMT"}), urllib3Wait},
		"urllib3 RFC 850":       {slices.Concat(urllib3, []string{"--retry-after", "Monday, 03-Jun-19 11:30:12 GMT"}), urllib3Wait},
		"urllib3 asctime":       {slices.Concat(urllib3, []string{"--retry-after", "Mon Jun  3 11:30:12 2019"}), urllib3Wait},
		"urllib3 over the wait": {slices.Concat(urllib3, []string{"--retry-after", "3700"}), tooLong},
		// urllib3 sleeps 3600s for this; RFC 9110 allows neither "3" nor "UTC".
		"urllib3 UTC one-digit day": {slices.Concat(urllib3, []string{"--retry-after", "Mon, 3 Jun 2019 12:00:00 UTC"}), invalid},
		"urllib3 tab and space":     {[]string{"--retry-after", "\t10 "}, wait10},

		// go-retryablehttp TestParseRetryAfterHeader (now 23:59:57).
		"retryablehttp seconds": {slices.Concat(retryable, []string{"--retry-after", "2"}), `{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"DeltaSeconds","delaySeconds":2,"readyAt":"1999-12-31T23:59:59Z"}`},
		"retryablehttp date":    {slices.Concat(retryable, []string{"--retry-after", "Fri, 31 Dec 1999 23:59:59 GMT"}), `{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"HTTPDate","delaySeconds":2,"readyAt":"1999-12-31T23:59:59Z"}`},
		"retryablehttp past":    {slices.Concat(retryable, []string{"--retry-after", "Fri, 31 Dec 1999 23:59:00 GMT"}), `{"decision":"Wait","reason":"ServerRequested","retryAfterSource":"HTTPDate","delaySeconds":0,"readyAt":"1999-12-31T23:59:57Z"}`},
		// go-retryablehttp takes the first of two lines; a singleton sent twice is invalid.
		"retryablehttp two headers": {slices.Concat(retryable, []string{"--retry-after", "2", "--retry-after", "3"}), invalid},
		"retryablehttp empty":       {slices.Concat(retryable, []string{"--retry-after", ""}), invalid},
		"retryablehttp negative":    {slices.Concat(retryable, []string{"--retry-after", "-2"}), invalid},
		"retryablehttp bad date":    {slices.Concat(retryable, []string{"--retry-after", "Fri, 32 Dec 1999 23:59:59 GMT"}), invalid},
		"retryablehttp garbage":     {slices.Concat(retryable, []string{"--retry-after", "badbadbad"}), invalid},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runArgs(t, withBase(tc.args...)...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if out != tc.want+"\n" {
				t.Errorf("stdout =\n%s\nwant\n%s", out, tc.want)
			}
		})
	}
}

// TestPlanJSONShape: -o json prints exactly one object, and only the fields the
// contract gives each decision.
func TestPlanJSONShape(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		keys []string
	}{
		"wait":      {[]string{"--retry-after", "10"}, []string{"decision", "reason", "retryAfterSource", "delaySeconds", "readyAt"}},
		"not sent":  {[]string{"--outcome", "not-sent"}, []string{"decision", "reason", "delaySeconds", "readyAt"}},
		"stop":      {[]string{"--retry-after", "x"}, []string{"decision", "reason", "retryAfterSource"}},
		"escalate":  {[]string{"--fallback", "escalate"}, []string{"decision", "reason", "retryAfterSource"}},
		"no retry":  {[]string{"--status", "404"}, []string{"decision", "reason"}},
		"succeed":   {[]string{"--status", "204"}, []string{"decision"}},
		"reconcile": {[]string{"--outcome", "unknown"}, []string{"decision"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, out, _ := runArgs(t, withBase(tc.args...)...)
			if strings.Count(out, "\n") != 1 {
				t.Fatalf("stdout %q is not one line", out)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatalf("stdout %q: %v", out, err)
			}
			var keys []string
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			want := slices.Sorted(slices.Values(tc.keys))
			if !slices.Equal(keys, want) {
				t.Errorf("keys %v, want %v (%s)", keys, want, out)
			}
			if d, ok := m["delaySeconds"]; ok {
				if _, isNum := d.(float64); !isNum {
					t.Errorf("delaySeconds %v is not a number", d)
				}
			}
			if r, ok := m["readyAt"].(string); ok {
				if at, err := time.Parse(time.RFC3339Nano, r); err != nil || !strings.HasSuffix(r, "Z") || at.Before(clock) {
					t.Errorf("readyAt %q is not RFC 3339 UTC at or after now (%v)", r, err)
				}
			}
		})
	}
}
