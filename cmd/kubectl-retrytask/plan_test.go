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
		"no command":             {[]string{}, "Usage"},
		"unknown command":        {[]string{"resolve"}, `unknown command "resolve"`},
		"unknown flag":           {[]string{"plan", "--bogus"}, "bogus"},
		"missing status":         {[]string{"plan", "--deadline", "2026-11-30T10:10:00Z"}, "--status is required"},
		"missing deadline":       {[]string{"plan", "--status", "429"}, "--deadline is required"},
		"bad status":             {[]string{"plan", "--status", "abc", "--deadline", "2026-11-30T10:10:00Z"}, "status"},
		"status out of range":    {[]string{"plan", "--status", "99", "--deadline", "2026-11-30T10:10:00Z"}, "100-599"},
		"bad deadline":           {[]string{"plan", "--status", "429", "--deadline", "tomorrow"}, "RFC 3339"},
		"bad now":                {withBase("--now", "2026-11-30 10:00:00"), "RFC 3339"},
		"bad ready-at":           {withBase("--ready-at", "soon"), "ready-at"},
		"zero attempts":          {withBase("--attempts", "0"), "at least 1"},
		"bad max-attempts":       {withBase("--max-attempts", "three"), "max-attempts"},
		"negative max-wait":      {withBase("--max-wait", "-1"), "whole seconds"},
		"fractional max-wait":    {withBase("--max-wait", "1.5"), "whole seconds"},
		"huge fallback-max":      {withBase("--fallback-max", "99999999999999"), "whole seconds"},
		"bad fallback-initial":   {withBase("--fallback-initial", "x"), "fallback-initial"},
		"a 4xx in retry-on":      {withBase("--retry-on", "429,404"), "404"},
		"garbage in retry-on":    {withBase("--retry-on", "429,,503"), "retryable status"},
		"bad fallback":           {withBase("--fallback", "retry"), "backoff, stop or escalate"},
		"bad escalate-on":        {withBase("--escalate-on", "Timeout"), "not a stop reason"},
		"bad output":             {withBase("-o", "yaml"), "json or text"},
		"bad seed":               {withBase("--seed", "-1"), "seed"},
		"bad outcome":            {withBase("--outcome", "timeout"), "not-sent"},
		"bad bool":               {withBase("--safe-to-retry=maybe"), "safe-to-retry"},
		"bool with a space":      {withBase("--safe-to-retry", "false"), "--name=false"},
		"stray argument":         {withBase("now"), `unexpected argument "now"`},
		"retry-after needs text": {withBase("--retry-after"), "retry-after"},
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
