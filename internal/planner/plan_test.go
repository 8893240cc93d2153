package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/retry-operator/retry-operator/internal/retryafter"
)

// now is the fixed clock of these tests: 2026-11-30T10:00:00Z.
var now = time.Date(2026, time.November, 30, 10, 0, 0, 0, time.UTC)

// halfRand is a jitter source that always picks the middle of [0, n), so a jittered
// backoff is exactly half its cap. It records the last n to show the cap.
type halfRand struct{ n int64 }

func (r *halfRand) Int64N(n int64) int64 {
	r.n = n
	return n / 2
}

// policy is the API's default policy (maxAttempts 3, maxWait 60s, retryOn [429],
// fallback Backoff 1s..30s), safe to retry.
func policy() Policy {
	return Policy{
		MaxAttempts: 3,
		MaxWait:     60 * time.Second,
		RetryOn:     []int{429},
		SafeToRetry: true,
		Fallback:    Fallback{Policy: FallbackBackoff, InitialDelay: time.Second, MaxDelay: 30 * time.Second},
	}
}

// state is a task whose first attempt is in flight, with a 10-minute deadline.
func state() State {
	return State{Attempts: 1, ActiveAttempt: 1, Deadline: now.Add(10 * time.Minute)}
}

func response(status int, retryAfter ...string) Outcome {
	return Outcome{Kind: Response, Attempt: 1, StatusCode: status, RetryAfter: retryAfter}
}

// want is the part of a Decision a test case pins down. source is the Retry-After
// source the decision must carry ("" means RetryAfter must be nil).
type want struct {
	kind    DecisionKind
	why     WaitReason
	reason  StopReason
	delay   time.Duration
	readyAt time.Time // zero: now + delay
	source  retryafter.Source
}

func TestPlan(t *testing.T) {
	tests := map[string]struct {
		state   func(*State)
		outcome Outcome
		policy  func(*Policy)
		now     time.Time // zero: now
		want    want
	}{
		// Duplicate and stale events (I3).
		"outcome when no attempt is active is a duplicate": {
			state: func(s *State) { s.ActiveAttempt = 0; s.ReadyAt = now.Add(10 * time.Second) }, outcome: response(429, "5"),
			want: want{kind: Ignore},
		},
		"outcome for an older attempt is stale": {
			state: func(s *State) { s.Attempts, s.ActiveAttempt = 2, 2 }, outcome: response(429, "5"),
			want: want{kind: Ignore},
		},

		// Success and unknown outcomes.
		"200 succeeds":                    {outcome: response(200), want: want{kind: Succeed}},
		"204 succeeds":                    {outcome: response(204), want: want{kind: Succeed}},
		"299 succeeds":                    {outcome: response(299), want: want{kind: Succeed}},
		"200 after the deadline succeeds": {outcome: response(200), now: now.Add(time.Hour), want: want{kind: Succeed}},
		"unknown timeout never takes the 429 path": {
			outcome: Outcome{Kind: Unknown, Attempt: 1, StatusCode: 429, RetryAfter: []string{"1"}},
			want:    want{kind: Reconcile},
		},
		"an unclassified outcome is reconciled, not guessed at": {
			outcome: Outcome{Kind: "Weird", Attempt: 1}, want: want{kind: Reconcile},
		},

		// NotSent: the server never saw it.
		"not sent backs off with jitter": {
			outcome: Outcome{Kind: NotSent, Attempt: 1},
			want:    want{kind: Wait, why: WaitNotSent, delay: 500 * time.Millisecond},
		},
		"not sent doubles the cap per attempt": {
			state: func(s *State) { s.Attempts, s.ActiveAttempt = 2, 2 }, outcome: Outcome{Kind: NotSent, Attempt: 2},
			want: want{kind: Wait, why: WaitNotSent, delay: time.Second},
		},
		"not sent uses the backoff even when the fallback policy is Stop": {
			outcome: Outcome{Kind: NotSent, Attempt: 1}, policy: func(p *Policy) { p.Fallback.Policy = FallbackStop },
			want: want{kind: Wait, why: WaitNotSent, delay: 500 * time.Millisecond},
		},
		"not sent needs no safeToRetry": {
			outcome: Outcome{Kind: NotSent, Attempt: 1}, policy: func(p *Policy) { p.SafeToRetry = false },
			want: want{kind: Wait, why: WaitNotSent, delay: 500 * time.Millisecond},
		},
		"not sent with attempts exhausted stops": {
			state: func(s *State) { s.Attempts, s.ActiveAttempt = 3, 3 }, outcome: Outcome{Kind: NotSent, Attempt: 3},
			want: want{kind: Stop, reason: AttemptBudgetExhausted},
		},
		"not sent after the deadline stops": {
			outcome: Outcome{Kind: NotSent, Attempt: 1}, now: now.Add(10 * time.Minute),
			want: want{kind: Stop, reason: DeadlineExhausted},
		},
		"not sent whose backoff ends past the deadline stops now": {
			state: func(s *State) { s.Deadline = now.Add(200 * time.Millisecond) }, outcome: Outcome{Kind: NotSent, Attempt: 1},
			want: want{kind: Stop, reason: DeadlineExhausted},
		},

		// Which statuses are retryable.
		"503 not listed is not retryable": {outcome: response(503, "5"), want: want{kind: Stop, reason: NonRetryableStatus}},
		"503 listed is retryable": {
			outcome: response(503, "5"), policy: func(p *Policy) { p.RetryOn = []int{503} },
			want: want{kind: Wait, why: ServerRequested, delay: 5 * time.Second, source: retryafter.DeltaSeconds},
		},
		"500 listed is retryable": {
			outcome: response(500, "5"), policy: func(p *Policy) { p.RetryOn = []int{500, 503} },
			want: want{kind: Wait, why: ServerRequested, delay: 5 * time.Second, source: retryafter.DeltaSeconds},
		},
		"429 is retryable even when not listed": {
			outcome: response(429, "5"), policy: func(p *Policy) { p.RetryOn = nil },
			want: want{kind: Wait, why: ServerRequested, delay: 5 * time.Second, source: retryafter.DeltaSeconds},
		},
		"a listed 4xx is never retryable": {
			outcome: response(408, "5"), policy: func(p *Policy) { p.RetryOn = []int{408} },
			want: want{kind: Stop, reason: NonRetryableStatus},
		},
		"3xx is not retryable":  {outcome: response(301), want: want{kind: Stop, reason: NonRetryableStatus}},
		"1xx is not retryable":  {outcome: response(103), want: want{kind: Stop, reason: NonRetryableStatus}},
		"status 0 is not valid": {outcome: response(0), want: want{kind: Stop, reason: NonRetryableStatus}},
		"status 600 listed is not retryable": {
			outcome: response(600, "5"), policy: func(p *Policy) { p.RetryOn = []int{600} },
			want: want{kind: Stop, reason: NonRetryableStatus},
		},

		// Authorization and budgets, checked before the header.
		"not safe to retry stops": {
			outcome: response(429, "5"), policy: func(p *Policy) { p.SafeToRetry = false },
			want: want{kind: Stop, reason: RetryNotAuthorized, source: retryafter.DeltaSeconds},
		},
		"exhausted attempts stop": {
			state: func(s *State) { s.Attempts, s.ActiveAttempt = 3, 3 }, outcome: Outcome{Kind: Response, Attempt: 3, StatusCode: 429, RetryAfter: []string{"5"}},
			want: want{kind: Stop, reason: AttemptBudgetExhausted, source: retryafter.DeltaSeconds},
		},
		"attempts beyond the budget stop": {
			state: func(s *State) { s.Attempts, s.ActiveAttempt = 5, 5 }, outcome: Outcome{Kind: Response, Attempt: 5, StatusCode: 429, RetryAfter: []string{"5"}},
			want: want{kind: Stop, reason: AttemptBudgetExhausted, source: retryafter.DeltaSeconds},
		},
		"a budget of one attempt never retries": {
			outcome: response(429, "5"), policy: func(p *Policy) { p.MaxAttempts = 1 },
			want: want{kind: Stop, reason: AttemptBudgetExhausted, source: retryafter.DeltaSeconds},
		},
		"the last allowed retry is scheduled": {
			state: func(s *State) { s.Attempts, s.ActiveAttempt = 2, 2 }, outcome: Outcome{Kind: Response, Attempt: 2, StatusCode: 429, RetryAfter: []string{"5"}},
			want: want{kind: Wait, why: ServerRequested, delay: 5 * time.Second, source: retryafter.DeltaSeconds},
		},
		"now past the deadline stops": {
			outcome: response(429, "0"), now: now.Add(11 * time.Minute),
			want: want{kind: Stop, reason: DeadlineExhausted, source: retryafter.DeltaSeconds},
		},
		"one microsecond before the deadline a zero wait is scheduled": {
			state: func(s *State) { s.Deadline = now.Add(time.Microsecond) }, outcome: response(429, "0"),
			want: want{kind: Wait, why: ServerRequested, delay: 0, source: retryafter.DeltaSeconds},
		},
		"a scheduled readyAt at the deadline stops": {
			state: func(s *State) { s.ReadyAt = s.Deadline }, outcome: response(429, "1"),
			want: want{kind: Stop, reason: DeadlineExhausted, source: retryafter.DeltaSeconds},
		},
		"a wait whose rounding reaches the deadline stops": {
			state: func(s *State) { s.Deadline = now.Add(10*time.Second + time.Microsecond) }, outcome: response(429, "10"),
			now:  now.Add(time.Nanosecond),
			want: want{kind: Stop, reason: DeadlineExhausted, source: retryafter.DeltaSeconds},
		},
		"now at the deadline stops": {
			outcome: response(429, "5"), now: now.Add(10 * time.Minute),
			want: want{kind: Stop, reason: DeadlineExhausted, source: retryafter.DeltaSeconds},
		},
		"budgets come before an invalid header": {
			state: func(s *State) { s.Attempts, s.ActiveAttempt = 3, 3 }, outcome: Outcome{Kind: Response, Attempt: 3, StatusCode: 429, RetryAfter: []string{"soon"}},
			want: want{kind: Stop, reason: AttemptBudgetExhausted, source: retryafter.Invalid},
		},

		// Invalid header: never an endless wait, never a guess.
		"invalid value stops":         {outcome: response(429, "soon"), want: want{kind: Stop, reason: InvalidRetryAfter, source: retryafter.Invalid}},
		"empty value stops":           {outcome: response(429, ""), want: want{kind: Stop, reason: InvalidRetryAfter, source: retryafter.Invalid}},
		"negative value stops":        {outcome: response(429, "-1"), want: want{kind: Stop, reason: InvalidRetryAfter, source: retryafter.Invalid}},
		"two header lines stop":       {outcome: response(429, "5", "5"), want: want{kind: Stop, reason: InvalidRetryAfter, source: retryafter.Invalid}},
		"huge value stops, not waits": {outcome: response(429, "99999999999999999999"), want: want{kind: Stop, reason: WaitBudgetExceeded, source: retryafter.DeltaSeconds}},
		// A saturated value is a lower bound of what the server asked, so even a
		// budget that would take ~68 years refuses it instead of scheduling early.
		"a saturated delta stops even under a vast maxWait": {
			state: func(s *State) { s.Deadline = now.AddDate(200, 0, 0) }, outcome: response(429, "99999999999999999999"),
			policy: func(p *Policy) { p.MaxWait = time.Duration(retryafter.MaxSeconds) * time.Second },
			want:   want{kind: Stop, reason: WaitBudgetExceeded, source: retryafter.DeltaSeconds},
		},
		"a date past what a Duration holds stops even under an unlimited maxWait": {
			state: func(s *State) { s.Deadline = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC) }, outcome: response(429, "Fri, 31 Dec 9999 23:59:59 GMT"),
			policy: func(p *Policy) { p.MaxWait = 1<<63 - 1 },
			want:   want{kind: Stop, reason: WaitBudgetExceeded, source: retryafter.HTTPDate},
		},
		"one second below saturation is an exact wait when the budget allows it": {
			state: func(s *State) { s.Deadline = now.AddDate(200, 0, 0) }, outcome: response(429, "2147483647"),
			policy: func(p *Policy) { p.MaxWait = time.Duration(retryafter.MaxSeconds) * time.Second },
			want:   want{kind: Wait, why: ServerRequested, delay: 2147483647 * time.Second, source: retryafter.DeltaSeconds},
		},
		"a comma list stops": {outcome: response(429, "10, 20"), want: want{kind: Stop, reason: InvalidRetryAfter, source: retryafter.Invalid}},
		"a fraction stops":   {outcome: response(429, "1.5"), want: want{kind: Stop, reason: InvalidRetryAfter, source: retryafter.Invalid}},
		"a zone other than GMT stops": {
			outcome: response(429, "Mon, 30 Nov 2026 10:00:30 UTC"), want: want{kind: Stop, reason: InvalidRetryAfter, source: retryafter.Invalid},
		},
		"an invalid value with a huge budget still stops": {
			state: func(s *State) { s.Deadline = now.AddDate(200, 0, 0) }, outcome: response(429, "soon"),
			policy: func(p *Policy) { p.MaxWait = 1<<63 - 1; p.MaxAttempts = 100 },
			want:   want{kind: Stop, reason: InvalidRetryAfter, source: retryafter.Invalid},
		},

		// Missing header: the explicit fallback.
		"missing header backs off": {
			outcome: response(429),
			want:    want{kind: Wait, why: WaitFallbackBackoff, delay: 500 * time.Millisecond, source: retryafter.Missing},
		},
		"missing header backoff is capped by maxWait": {
			state:   func(s *State) { s.Attempts, s.ActiveAttempt = 2, 2 },
			outcome: Outcome{Kind: Response, Attempt: 2, StatusCode: 429},
			policy: func(p *Policy) {
				p.Fallback.InitialDelay = 40 * time.Second
				p.Fallback.MaxDelay = 10 * time.Minute
				p.MaxAttempts = 5
			},
			want: want{kind: Wait, why: WaitFallbackBackoff, delay: 30 * time.Second, source: retryafter.Missing},
		},
		"missing header with fallback Stop stops": {
			outcome: response(429), policy: func(p *Policy) { p.Fallback.Policy = FallbackStop },
			want: want{kind: Stop, reason: RetryAfterMissing, source: retryafter.Missing},
		},
		"missing header with fallback Escalate escalates": {
			outcome: response(429), policy: func(p *Policy) { p.Fallback.Policy = FallbackEscalate },
			want: want{kind: Escalate, reason: RetryAfterMissing, source: retryafter.Missing},
		},
		"missing header with an unknown fallback stops": {
			outcome: response(429), policy: func(p *Policy) { p.Fallback.Policy = "" },
			want: want{kind: Stop, reason: RetryAfterMissing, source: retryafter.Missing},
		},

		// Server waits: honoured exactly or refused, never shortened.
		"seconds become the wait": {
			outcome: response(429, "10"),
			want:    want{kind: Wait, why: ServerRequested, delay: 10 * time.Second, source: retryafter.DeltaSeconds},
		},
		"zero seconds is an immediate wait": {
			outcome: response(429, "0"),
			want:    want{kind: Wait, why: ServerRequested, delay: 0, source: retryafter.DeltaSeconds},
		},
		"seconds equal to maxWait are accepted": {
			outcome: response(429, "60"),
			want:    want{kind: Wait, why: ServerRequested, delay: 60 * time.Second, source: retryafter.DeltaSeconds},
		},
		"seconds above maxWait stop without shortening": {
			outcome: response(429, "61"),
			want:    want{kind: Stop, reason: WaitBudgetExceeded, source: retryafter.DeltaSeconds},
		},
		"an HTTP-date becomes a wait": {
			outcome: response(429, "Mon, 30 Nov 2026 10:00:30 GMT"),
			want:    want{kind: Wait, why: ServerRequested, delay: 30 * time.Second, source: retryafter.HTTPDate},
		},
		"a past HTTP-date is a zero wait, never in the past": {
			outcome: response(429, "Sun, 06 Nov 1994 08:49:37 GMT"),
			want:    want{kind: Wait, why: ServerRequested, delay: 0, readyAt: now, source: retryafter.HTTPDate},
		},
		"an HTTP-date with a local clock ahead waits by the server's Date": {
			outcome: Outcome{Kind: Response, Attempt: 1, StatusCode: 429,
				RetryAfter: []string{"Mon, 30 Nov 2026 10:00:30 GMT"}, Date: []string{"Mon, 30 Nov 2026 09:59:50 GMT"}},
			want: want{kind: Wait, why: ServerRequested, delay: 40 * time.Second, source: retryafter.HTTPDate},
		},
		"an RFC 850 date becomes a wait": {
			outcome: response(429, "Monday, 30-Nov-26 10:00:30 GMT"),
			want:    want{kind: Wait, why: ServerRequested, delay: 30 * time.Second, source: retryafter.HTTPDate},
		},
		"an asctime date becomes a wait": {
			outcome: response(429, "Mon Nov 30 10:00:30 2026"),
			want:    want{kind: Wait, why: ServerRequested, delay: 30 * time.Second, source: retryafter.HTTPDate},
		},
		"an HTTP-date seen with a fractional now rounds up": {
			outcome: response(429, "Mon, 30 Nov 2026 10:00:30 GMT"), now: now.Add(500*time.Millisecond + time.Nanosecond),
			want: want{kind: Wait, why: ServerRequested, delay: 29*time.Second + 500*time.Millisecond - time.Nanosecond,
				readyAt: now.Add(30 * time.Second), source: retryafter.HTTPDate},
		},
		"an HTTP-date inside maxWait by the local clock but beyond it by the server's Date stops": {
			outcome: Outcome{Kind: Response, Attempt: 1, StatusCode: 429,
				RetryAfter: []string{"Mon, 30 Nov 2026 10:00:50 GMT"}, Date: []string{"Mon, 30 Nov 2026 09:59:45 GMT"}},
			want: want{kind: Stop, reason: WaitBudgetExceeded, source: retryafter.HTTPDate},
		},
		"a past HTTP-date with a server Date behind it waits by the server's clock": {
			outcome: Outcome{Kind: Response, Attempt: 1, StatusCode: 429,
				RetryAfter: []string{"Mon, 30 Nov 2026 09:59:58 GMT"}, Date: []string{"Mon, 30 Nov 2026 09:59:55 GMT"}},
			want: want{kind: Wait, why: ServerRequested, delay: 3 * time.Second, source: retryafter.HTTPDate},
		},
		"an HTTP-date beyond maxWait stops": {
			outcome: response(429, "Mon, 30 Nov 2026 10:05:00 GMT"),
			want:    want{kind: Stop, reason: WaitBudgetExceeded, source: retryafter.HTTPDate},
		},

		// readyAt: never earlier than already scheduled, and inside the deadline.
		"a later scheduled readyAt is kept": {
			state: func(s *State) { s.ReadyAt = now.Add(45 * time.Second) }, outcome: response(429, "10"),
			want: want{kind: Wait, why: ServerRequested, delay: 45 * time.Second, source: retryafter.DeltaSeconds},
		},
		"an earlier scheduled readyAt is replaced": {
			state: func(s *State) { s.ReadyAt = now.Add(5 * time.Second) }, outcome: response(429, "10"),
			want: want{kind: Wait, why: ServerRequested, delay: 10 * time.Second, source: retryafter.DeltaSeconds},
		},
		"a wait past the deadline stops now": {
			state: func(s *State) { s.Deadline = now.Add(5 * time.Second) }, outcome: response(429, "10"),
			want: want{kind: Stop, reason: DeadlineExhausted, source: retryafter.DeltaSeconds},
		},
		"a wait ending exactly at the deadline stops": {
			state: func(s *State) { s.Deadline = now.Add(10 * time.Second) }, outcome: response(429, "10"),
			want: want{kind: Stop, reason: DeadlineExhausted, source: retryafter.DeltaSeconds},
		},
		"readyAt rounds up to the microsecond": {
			outcome: response(429, "10"), now: now.Add(time.Nanosecond),
			want: want{kind: Wait, why: ServerRequested, delay: 10*time.Second + 999*time.Nanosecond,
				readyAt: now.Add(10*time.Second + time.Microsecond), source: retryafter.DeltaSeconds},
		},

		// escalateOn.
		"a listed stop reason escalates": {
			outcome: response(429, "61"), policy: func(p *Policy) { p.EscalateOn = []StopReason{WaitBudgetExceeded} },
			want: want{kind: Escalate, reason: WaitBudgetExceeded, source: retryafter.DeltaSeconds},
		},
		"a listed deadline stop escalates": {
			state: func(s *State) { s.Deadline = now.Add(5 * time.Second) }, outcome: response(429, "10"),
			policy: func(p *Policy) { p.EscalateOn = []StopReason{DeadlineExhausted} },
			want:   want{kind: Escalate, reason: DeadlineExhausted, source: retryafter.DeltaSeconds},
		},
		"a listed non-retryable status escalates": {
			outcome: response(404), policy: func(p *Policy) { p.EscalateOn = []StopReason{NonRetryableStatus} },
			want: want{kind: Escalate, reason: NonRetryableStatus},
		},
		"an unlisted stop reason stays a stop": {
			outcome: response(429, "61"), policy: func(p *Policy) { p.EscalateOn = []StopReason{DeadlineExhausted} },
			want: want{kind: Stop, reason: WaitBudgetExceeded, source: retryafter.DeltaSeconds},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, p, at := state(), policy(), now
			if tc.state != nil {
				tc.state(&s)
			}
			if tc.policy != nil {
				tc.policy(&p)
			}
			if !tc.now.IsZero() {
				at = tc.now
			}
			d := Plan(s, tc.outcome, p, at, &halfRand{})
			checkDecision(t, d, tc.want, at)
		})
	}
}

func checkDecision(t *testing.T, d Decision, w want, at time.Time) {
	t.Helper()
	if d.Kind != w.kind || d.Why != w.why || d.Reason != w.reason {
		t.Fatalf("decision = %s/%s/%s (%s), want %s/%s/%s", d.Kind, d.Why, d.Reason, d.Message, w.kind, w.why, w.reason)
	}
	wantReadyAt := w.readyAt
	if w.kind == Wait && wantReadyAt.IsZero() {
		wantReadyAt = at.Add(w.delay)
	}
	if !d.ReadyAt.Equal(wantReadyAt) || d.Delay != w.delay {
		t.Errorf("readyAt, delay = %v, %v; want %v, %v", d.ReadyAt, d.Delay, wantReadyAt, w.delay)
	}
	switch {
	case w.source == "" && d.RetryAfter != nil:
		t.Errorf("RetryAfter = %+v, want nil", *d.RetryAfter)
	case w.source != "" && (d.RetryAfter == nil || d.RetryAfter.Source != w.source):
		t.Errorf("RetryAfter = %+v, want source %s", d.RetryAfter, w.source)
	}
	if !strings.HasPrefix(d.Message, string(d.Kind)+" ") && !strings.HasPrefix(d.Message, string(d.Kind)+":") ||
		!strings.HasSuffix(d.Message, ".") || strings.Count(d.Message, ". ") > 0 {
		t.Errorf("Message %q is not one sentence led by the decision", d.Message)
	}
}

func TestPlanMessages(t *testing.T) {
	tests := map[string]struct {
		s    State
		o    Outcome
		p    func(*Policy)
		want string
	}{
		"wait": {s: state(), o: response(429, "10"),
			want: `Wait until 2026-11-30T10:00:10Z (10s): the server answered 429 with Retry-After "10".`},
		"stop": {s: state(), o: response(429, "120"),
			want: `Stop with WaitBudgetExceeded: the server asked to wait 2m0s (Retry-After "120"), longer than the 1m0s the task accepts, and a server wait is never shortened.`},
		"escalate": {s: state(), o: response(429, "120"), p: func(p *Policy) { p.EscalateOn = []StopReason{WaitBudgetExceeded} },
			want: `Escalate with WaitBudgetExceeded: the server asked to wait 2m0s (Retry-After "120"), longer than the 1m0s the task accepts, and a server wait is never shortened; the reason is listed in escalateOn; a human resolves the task.`},
		"reconcile": {s: state(), o: Outcome{Kind: Unknown, Attempt: 1},
			want: `Reconcile: the outcome of attempt 1 is unknown (the request may have been processed), so it is not retried without reconciliation.`},
		"succeed": {s: state(), o: response(201), want: `Succeed: attempt 1 returned status 201.`},
		"ignore stale": {s: State{Attempts: 2, ActiveAttempt: 2}, o: response(429),
			want: `Ignore: the outcome is for attempt 1 but attempt 2 is in flight, so it is stale and changes nothing.`},
		"ignore duplicate": {s: State{Attempts: 1}, o: response(429),
			want: `Ignore: the outcome is for attempt 1 but no attempt is in flight, so it is a duplicate and changes nothing.`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := policy()
			if tc.p != nil {
				tc.p(&p)
			}
			if got := Plan(tc.s, tc.o, p, now, &halfRand{}).Message; got != tc.want {
				t.Errorf("Message =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// apply is what the controller does with a decision: the attempt is no longer in
// flight, and a Wait's readyAt is recorded.
func apply(s State, d Decision) State {
	if d.Kind == Ignore {
		return s
	}
	s.ActiveAttempt = 0
	if d.Kind == Wait {
		s.ReadyAt = d.ReadyAt
	}
	return s
}

// TestTwoEventsForOneAttemptScheduleOnce: the same 429 delivered twice (a watch
// replay, two workers) schedules one retry; the second event changes nothing, even
// when its header would have asked for a shorter wait.
func TestTwoEventsForOneAttemptScheduleOnce(t *testing.T) {
	s := state()
	first := Plan(s, response(429, "30"), policy(), now, &halfRand{})
	if first.Kind != Wait {
		t.Fatalf("first event: %s, want Wait", first.Message)
	}
	s = apply(s, first)
	second := Plan(s, response(429, "5"), policy(), now.Add(time.Second), &halfRand{})
	if second.Kind != Ignore {
		t.Fatalf("second event: %s, want Ignore", second.Message)
	}
	if s2 := apply(s, second); s2 != s {
		t.Errorf("second event changed the state: %+v -> %+v", s, s2)
	}
	// The one scheduled retry is claimed once; a re-queue finds it busy.
	s, res := Claim(s, 3, now.Add(30*time.Second))
	if res != Claimed || s.Attempts != 2 {
		t.Fatalf("Claim = %+v, %s", s, res)
	}
	if _, res := Claim(s, 3, now.Add(31*time.Second)); res != Busy {
		t.Errorf("second Claim = %s, want Busy", res)
	}
}

// TestSequenceStaysInBudget walks a task through 429s until it stops, and checks
// that each readyAt is honoured by Claim and the attempt budget is never exceeded.
func TestSequenceStaysInBudget(t *testing.T) {
	s, p := state(), policy()
	at := now
	for i := range 10 {
		d := Plan(s, Outcome{Kind: Response, Attempt: s.ActiveAttempt, StatusCode: 429, RetryAfter: []string{"20"}}, p, at, &halfRand{})
		if d.Kind != Wait {
			if d.Kind != Stop || d.Reason != AttemptBudgetExhausted || s.Attempts != p.MaxAttempts {
				t.Fatalf("after %d attempts: %s", s.Attempts, d.Message)
			}
			return
		}
		s = apply(s, d)
		if _, res := Claim(s, p.MaxAttempts, d.ReadyAt.Add(-time.Microsecond)); res != NotDue {
			t.Fatalf("claim just before readyAt = %s, want NotDue", res)
		}
		at = d.ReadyAt
		var res ClaimResult
		if s, res = Claim(s, p.MaxAttempts, at); res != Claimed {
			t.Fatalf("claim at readyAt = %s (round %d)", res, i)
		}
	}
	t.Fatal("the task never stopped")
}

// TestIndependentTasks: the planner keeps no state between calls, so one task's
// exhausted budget, long wait or attempt in flight cannot block another task.
func TestIndependentTasks(t *testing.T) {
	b := state()
	b.ActiveAttempt, b.Attempts = 0, 0
	bPlan := func() (Decision, State, ClaimResult) {
		claimed, res := Claim(b, 3, now)
		return Plan(claimed, Outcome{Kind: Response, Attempt: 1, StatusCode: 429, RetryAfter: []string{"5"}}, policy(), now, &halfRand{}), claimed, res
	}
	alone, aloneState, aloneRes := bPlan()

	// Task A: busy, out of attempts, and told to wait far longer than it may.
	a := State{Attempts: 3, ActiveAttempt: 3, Deadline: now.Add(time.Minute), ReadyAt: now.Add(time.Hour)}
	if _, res := Claim(a, 3, now); res != Busy {
		t.Fatalf("task A claim = %s, want Busy", res)
	}
	if d := Plan(a, Outcome{Kind: Response, Attempt: 3, StatusCode: 429, RetryAfter: []string{"86400"}}, policy(), now, &halfRand{}); d.Kind != Stop {
		t.Fatalf("task A = %s, want Stop", d.Message)
	}

	after, afterState, afterRes := bPlan()
	if aloneRes != Claimed || afterRes != Claimed || aloneState != afterState {
		t.Errorf("task B claim: alone %s %+v, after A %s %+v", aloneRes, aloneState, afterRes, afterState)
	}
	if alone.Kind != Wait || after.Kind != alone.Kind || !after.ReadyAt.Equal(alone.ReadyAt) {
		t.Errorf("task B plan: alone %s, after A %s", alone.Message, after.Message)
	}
}

// TestCeilMicroNeverEarlier: the exported rounding the controller uses is the
// planner's own, up to the next whole microsecond and never down.
func TestCeilMicroNeverEarlier(t *testing.T) {
	for in, want := range map[time.Time]time.Time{
		now:                           now,
		now.Add(time.Nanosecond):      now.Add(time.Microsecond),
		now.Add(time.Microsecond - 1): now.Add(time.Microsecond),
		now.Add(time.Microsecond):     now.Add(time.Microsecond),
		now.Add(-time.Nanosecond):     now,
		now.Add(time.Second + 1001*time.Nanosecond): now.Add(time.Second + 2*time.Microsecond),
	} {
		if got := CeilMicro(in); !got.Equal(want) {
			t.Errorf("CeilMicro(%v) = %v, want %v", in, got, want)
		}
	}
}

func BenchmarkPlan(b *testing.B) {
	s, p := state(), policy()
	o := response(429, "10")
	rnd := &halfRand{}
	b.ReportAllocs()
	for b.Loop() {
		Plan(s, o, p, now, rnd)
	}
}
