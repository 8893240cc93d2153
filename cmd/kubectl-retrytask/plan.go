package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/retry-operator/retry-operator/internal/planner"
)

const planUsage = `Usage:
  kubectl retrytask plan --status CODE --deadline RFC3339 [flags]

Runs the operator's retry planner on one attempt's outcome and prints its decision:
Succeed, Wait (with the time of the next attempt), Stop or Escalate (with the stop
reason), Reconcile (outcome unknown) or Ignore (a duplicate event). Offline: nothing
is sent and no cluster is contacted.

The outcome:
  --outcome KIND              response (default); not-sent: failed before any byte
                              was written; unknown: sent, but no status line came
                              (timeout, reset)
  --status CODE               the response's status, 100-599; required for
                              --outcome response, ignored otherwise
  --retry-after VALUE         one Retry-After header line; repeat the flag for
                              several lines. Omit it for a missing header;
                              --retry-after "" is a present but empty header
  --date VALUE                one Date header line of the response; repeatable

The task:
  --now RFC3339               when the outcome arrived (default: the current time,
                              to the microsecond)
  --attempts N                attempts used, counting the one that produced this
                              outcome, which is attempt N (default 1)
  --deadline RFC3339          the task's absolute deadline (required)
  --ready-at RFC3339          a next attempt already scheduled; it is never moved
                              earlier
  --active                    attempt N+1 is already in flight, so this outcome for
                              attempt N is a late duplicate event: the operator
                              ignores it rather than schedule a second retry

The policy (the RetryTask's spec.retry):
  --max-attempts N            attempts allowed, including the first (default 3)
  --max-wait SECONDS          longest server wait accepted; a longer one stops,
                              it is never shortened (default 60)
  --safe-to-retry=BOOL        whether the request may be sent again (default true)
  --retry-on LIST             5xx statuses to retry, e.g. 502,503; 429 is always
                              retried (default 429)
  --fallback POLICY           without a Retry-After: backoff, stop or escalate
                              (default backoff)
  --fallback-initial SECONDS  first backoff cap, doubled per attempt (default 1)
  --fallback-max SECONDS      largest backoff cap (default 30)
  --escalate-on LIST          stop reasons that escalate instead, e.g.
                              WaitBudgetExceeded,DeadlineExhausted
                              (both list flags may also be repeated)

Output:
  --seed N                    jitter seed for local backoff; the same seed gives
                              the same answer (default 1)
  -o, --output FORMAT         text: one sentence (default); json: one object with
                              decision, reason, retryAfterSource, delaySeconds and
                              readyAt; -ojson and -otext also work

Exit status: 0 when a decision is printed, 2 for a bad flag or value.
`

// planArgs is everything the plan flags describe.
type planArgs struct {
	state   planner.State
	outcome planner.Outcome
	policy  planner.Policy
	now     time.Time
	seed    uint64
	output  string
}

func runPlan(args []string, clock time.Time, stdout, stderr io.Writer) int {
	pa, err := parsePlanArgs(args, clock)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, planUsage)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\nRun 'kubectl retrytask plan --help' for usage.\n", err)
		return exitUsage
	}
	d := planner.Plan(pa.state, pa.outcome, pa.policy, pa.now, rand.New(rand.NewPCG(pa.seed, pa.seed)))
	if err := printDecision(stdout, d, pa.output); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitIO
	}
	return exitOK
}

func parsePlanArgs(args []string, clock time.Time) (planArgs, error) {
	// The defaults are the API's (a RetryTask that sets nothing but a deadline).
	pa := planArgs{
		state:   planner.State{Attempts: 1},
		outcome: planner.Outcome{Kind: planner.Response},
		policy: planner.Policy{
			MaxAttempts: 3,
			MaxWait:     60 * time.Second,
			RetryOn:     []int{429},
			SafeToRetry: true,
			Fallback:    planner.Fallback{Policy: planner.FallbackBackoff, InitialDelay: time.Second, MaxDelay: 30 * time.Second},
		},
		now:    clock.UTC().Truncate(time.Microsecond),
		seed:   1,
		output: "text",
	}
	var statusSet, active bool

	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by runPlan
	fs.Func("outcome", "", func(s string) error { return parseOutcome(s, &pa.outcome.Kind) })
	fs.Func("status", "", func(s string) error { statusSet = true; return parseStatus(s, &pa.outcome.StatusCode) })
	fs.Func("retry-after", "", appendFlag(&pa.outcome.RetryAfter))
	fs.Func("date", "", appendFlag(&pa.outcome.Date))
	fs.Func("now", "", timeFlag(&pa.now))
	fs.Func("attempts", "", countFlag(&pa.state.Attempts))
	fs.Func("deadline", "", timeFlag(&pa.state.Deadline))
	fs.Func("ready-at", "", timeFlag(&pa.state.ReadyAt))
	fs.BoolVar(&active, "active", false, "")
	fs.Func("max-attempts", "", countFlag(&pa.policy.MaxAttempts))
	fs.Func("max-wait", "", secondsFlag(&pa.policy.MaxWait))
	fs.BoolVar(&pa.policy.SafeToRetry, "safe-to-retry", true, "")
	fs.Func("retry-on", "", listFlag(&pa.policy.RetryOn, parseRetryOn))
	fs.Func("fallback", "", func(s string) error { return parseFallback(s, &pa.policy.Fallback.Policy) })
	fs.Func("fallback-initial", "", secondsFlag(&pa.policy.Fallback.InitialDelay))
	fs.Func("fallback-max", "", secondsFlag(&pa.policy.Fallback.MaxDelay))
	fs.Func("escalate-on", "", listFlag(&pa.policy.EscalateOn, parseEscalateOn))
	fs.Uint64Var(&pa.seed, "seed", 1, "")
	fs.Func("o", "", outputFlag(&pa.output))
	fs.Func("output", "", outputFlag(&pa.output))
	// kubectl users write -ojson; the flag package reads that as a flag "ojson".
	for _, format := range []string{"json", "text"} {
		fs.BoolFunc("o"+format, "", func(s string) error {
			if s != "true" {
				return errors.New("takes no value; write -o " + format)
			}
			pa.output = format
			return nil
		})
	}

	if err := fs.Parse(args); err != nil {
		return planArgs{}, err
	}
	switch {
	case fs.NArg() > 0:
		// Most likely `--safe-to-retry false`: a boolean flag takes its value after "=".
		return planArgs{}, fmt.Errorf("unexpected argument %q; write a boolean flag as --name=%s", fs.Arg(0), fs.Arg(0))
	case pa.state.Deadline.IsZero():
		return planArgs{}, errors.New("--deadline is required")
	case pa.outcome.Kind == planner.Response && !statusSet:
		return planArgs{}, errors.New("--status is required for --outcome response")
	}

	// The outcome is attempt N's, and attempt N is the one in flight. With --active,
	// attempt N+1 was claimed meanwhile, which makes this outcome a stale event.
	pa.outcome.Attempt = pa.state.Attempts
	if active {
		pa.state.Attempts++
	}
	pa.state.ActiveAttempt = pa.state.Attempts
	return pa, nil
}

func parseOutcome(s string, kind *planner.OutcomeKind) error {
	k, ok := map[string]planner.OutcomeKind{
		"response": planner.Response, "not-sent": planner.NotSent, "unknown": planner.Unknown,
	}[s]
	if !ok {
		return errors.New("want response, not-sent or unknown")
	}
	*kind = k
	return nil
}

func parseStatus(s string, status *int) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 100 || n > 599 {
		return errors.New("want an HTTP status code, 100-599")
	}
	*status = n
	return nil
}

// parseRetryOn accepts 429 and 5xx statuses only: the planner never retries a
// listed 1xx-4xx, and accepting one here would suggest it does.
func parseRetryOn(f string) (int, error) {
	n, err := strconv.Atoi(f)
	if err != nil || n != 429 && (n < 500 || n > 599) {
		return 0, fmt.Errorf("%q is not a retryable status; list 429 or 500-599", f)
	}
	return n, nil
}

func parseFallback(s string, p *planner.FallbackPolicy) error {
	for _, v := range []planner.FallbackPolicy{planner.FallbackBackoff, planner.FallbackStop, planner.FallbackEscalate} {
		if strings.EqualFold(s, string(v)) {
			*p = v
			return nil
		}
	}
	return errors.New("want backoff, stop or escalate")
}

func parseEscalateOn(f string) (planner.StopReason, error) {
	r := planner.StopReason(f)
	if !slices.Contains(planner.StopReasons, r) {
		return "", fmt.Errorf("%q is not a stop reason; want one of %v", f, planner.StopReasons)
	}
	return r, nil
}

// listFlag reads a comma-separated list flag. The first use replaces the default
// and later uses add to it, as kubectl's list flags do, so --retry-on 502
// --retry-on 503 means both; an empty value adds nothing.
func listFlag[T any](list *[]T, item func(string) (T, error)) func(string) error {
	set := false
	return func(s string) error {
		if !set {
			*list, set = (*list)[:0:0], true
		}
		if s == "" {
			return nil
		}
		for f := range strings.SplitSeq(s, ",") {
			v, err := item(strings.TrimSpace(f))
			if err != nil {
				return err
			}
			*list = append(*list, v)
		}
		return nil
	}
}

// appendFlag collects a repeatable flag; an empty value is kept, it means "present
// but empty".
func appendFlag(values *[]string) func(string) error {
	return func(s string) error {
		*values = append(*values, s)
		return nil
	}
}

func timeFlag(t *time.Time) func(string) error {
	return func(s string) error {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return errors.New("want an RFC 3339 time such as 2026-11-30T10:00:00Z")
		}
		*t = v.UTC()
		return nil
	}
}

// countFlag reads a count of attempts, at least 1.
func countFlag(n *int) func(string) error {
	return func(s string) error {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			return errors.New("want a whole number, at least 1")
		}
		*n = v
		return nil
	}
}

// maxFlagSeconds keeps a seconds flag well inside time.Duration (about 68 years).
const maxFlagSeconds = 1 << 31

func secondsFlag(d *time.Duration) func(string) error {
	return func(s string) error {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 || v > maxFlagSeconds {
			return fmt.Errorf("want whole seconds, 0-%d", maxFlagSeconds)
		}
		*d = time.Duration(v) * time.Second
		return nil
	}
}

func outputFlag(o *string) func(string) error {
	return func(s string) error {
		if s != "json" && s != "text" {
			return errors.New("want json or text")
		}
		*o = s
		return nil
	}
}

// decisionJSON is the `-o json` contract; field names and presence are relied on.
type decisionJSON struct {
	Decision         planner.DecisionKind `json:"decision"`
	Reason           string               `json:"reason,omitempty"`
	RetryAfterSource string               `json:"retryAfterSource,omitempty"`
	DelaySeconds     *float64             `json:"delaySeconds,omitempty"` // a pointer: 0 is a valid delay
	ReadyAt          string               `json:"readyAt,omitempty"`
}

func printDecision(w io.Writer, d planner.Decision, output string) error {
	if output == "text" {
		_, err := fmt.Fprintln(w, d.Message)
		return err
	}
	out := decisionJSON{Decision: d.Kind, Reason: string(d.Reason)}
	if d.RetryAfter != nil {
		out.RetryAfterSource = string(d.RetryAfter.Source)
	}
	if d.Kind == planner.Wait {
		secs := d.Delay.Seconds()
		out.Reason = string(d.Why)
		out.DelaySeconds = &secs
		out.ReadyAt = d.ReadyAt.UTC().Format(time.RFC3339Nano)
	}
	return json.NewEncoder(w).Encode(out)
}
