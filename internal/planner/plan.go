package planner

import (
	"fmt"
	"slices"
	"time"

	"github.com/retry-operator/retry-operator/internal/retryafter"
)

// Plan decides what follows the outcome o of the task's active attempt. now is the
// local time the outcome was observed; rnd is the jitter source for local backoff
// (nil means no jitter: the full backoff cap, which is never early).
//
// The rules, in order:
//   - An outcome for an attempt that is not the active one, or when none is active,
//     is a duplicate or stale event: Ignore. So two events for one attempt can never
//     schedule two retries.
//   - Unknown outcome: Reconcile. It never enters the 429 path (I5). An outcome kind
//     Plan does not know is treated the same way, because guessing "not sent" could
//     send twice.
//   - NotSent: Wait with the fallback's jittered backoff, whatever the fallback
//     policy, inside the attempt budget and the deadline. It does not need
//     SafeToRetry: no byte reached the server, so sending again cannot repeat a
//     side effect.
//   - 2xx: Succeed. Any status other than 429 or a listed 5xx: NonRetryableStatus.
//   - Then RetryNotAuthorized, AttemptBudgetExhausted, DeadlineExhausted (now),
//     InvalidRetryAfter, the fallback for a missing Retry-After, and
//     WaitBudgetExceeded for a server wait over MaxWait (never clamped down).
//   - readyAt = max(now+wait, s.ReadyAt), rounded up to the microsecond the API
//     stores; a readyAt at or after the deadline stops now with DeadlineExhausted.
//   - A stop reason listed in p.EscalateOn becomes Escalate with that reason.
func Plan(s State, o Outcome, p Policy, now time.Time, rnd Rand) Decision {
	if s.ActiveAttempt == 0 || o.Attempt != s.ActiveAttempt {
		return ignore(s, o)
	}
	var d Decision
	switch o.Kind {
	case Response:
		d = planResponse(s, o, p, now, rnd)
	case NotSent:
		d = planNotSent(s, o, p, now, rnd)
	default:
		d = Decision{Kind: Reconcile, Message: fmt.Sprintf(
			"the outcome of attempt %d is unknown (the request may have been processed), so it is not retried without reconciliation", o.Attempt)}
	}
	return finish(escalateIfListed(d, p.EscalateOn), now)
}

func ignore(s State, o Outcome) Decision {
	msg := fmt.Sprintf("Ignore: the outcome is for attempt %d but no attempt is in flight, so it is a duplicate and changes nothing.", o.Attempt)
	if s.ActiveAttempt != 0 {
		msg = fmt.Sprintf("Ignore: the outcome is for attempt %d but attempt %d is in flight, so it is stale and changes nothing.", o.Attempt, s.ActiveAttempt)
	}
	return Decision{Kind: Ignore, Message: msg}
}

func planNotSent(s State, o Outcome, p Policy, now time.Time, rnd Rand) Decision {
	if d, stopped := budgetStop(s, p, now); stopped {
		return d
	}
	wait := Backoff(s.Attempts, p.Fallback, p.MaxWait, rnd)
	return schedule(s, now, wait, WaitNotSent,
		fmt.Sprintf("attempt %d failed before any byte was sent, so it is retried after a jittered backoff", o.Attempt))
}

func planResponse(s State, o Outcome, p Policy, now time.Time, rnd Rand) Decision {
	if o.StatusCode >= 200 && o.StatusCode <= 299 {
		return Decision{Kind: Succeed, Message: fmt.Sprintf("attempt %d returned status %d", o.Attempt, o.StatusCode)}
	}
	if !retryable(o.StatusCode, p.RetryOn) {
		return stop(NonRetryableStatus, fmt.Sprintf("status %d is not retryable for this task (only 429 and the listed 5xx statuses are)", o.StatusCode))
	}
	ra := retryafter.Parse(o.RetryAfter, now)
	d := planRetry(s, o, p, now, rnd, ra)
	d.RetryAfter = &ra
	return d
}

// retryable: 429 always; a 5xx only when listed. A listed 1xx-4xx is not honoured,
// because retrying those would repeat a request the server has already answered.
func retryable(status int, retryOn []int) bool {
	return status == 429 || status >= 500 && status <= 599 && slices.Contains(retryOn, status)
}

// planRetry handles a retryable status; ra is its parsed Retry-After.
func planRetry(s State, o Outcome, p Policy, now time.Time, rnd Rand, ra retryafter.Value) Decision {
	if !p.SafeToRetry {
		return stop(RetryNotAuthorized, fmt.Sprintf("status %d is retryable but the request is not marked safe to retry", o.StatusCode))
	}
	if d, stopped := budgetStop(s, p, now); stopped {
		return d
	}
	switch ra.Source {
	case retryafter.Invalid:
		return stop(InvalidRetryAfter, fmt.Sprintf("Retry-After %q is not a valid delay or HTTP-date, and a broken value is never guessed at", ra.Raw))
	case retryafter.Missing:
		return planMissing(s, o, p, now, rnd)
	}
	wait := ra.Wait(now, o.Date)
	// A wait of MaxSeconds (~68 years) or more is where the parser saturates a
	// huge delta-seconds (and where Sub saturates a far HTTP-date): the server's
	// real wait may be longer still, so scheduling it would be early (I1). It
	// exceeds every budget, whatever MaxWait says.
	if wait > p.MaxWait || wait >= hugeWait {
		return stop(WaitBudgetExceeded, fmt.Sprintf("the server asked to wait %v (Retry-After %q), longer than the %v the task accepts, and a server wait is never shortened", wait, ra.Raw, p.MaxWait))
	}
	return schedule(s, now, wait, ServerRequested,
		fmt.Sprintf("the server answered %d with Retry-After %q", o.StatusCode, ra.Raw))
}

// hugeWait is the saturation point of a parsed delta-seconds, as a Duration.
const hugeWait = time.Duration(retryafter.MaxSeconds) * time.Second

func planMissing(s State, o Outcome, p Policy, now time.Time, rnd Rand) Decision {
	why := fmt.Sprintf("status %d came without Retry-After", o.StatusCode)
	switch p.Fallback.Policy {
	case FallbackBackoff:
		return schedule(s, now, Backoff(s.Attempts, p.Fallback, p.MaxWait, rnd), WaitFallbackBackoff,
			why+", so the fallback backoff applies")
	case FallbackEscalate:
		return Decision{Kind: Escalate, Reason: RetryAfterMissing, Message: why + " and the fallback policy is Escalate"}
	default:
		// Stop, and any policy Plan does not know: stopping is the choice that can
		// never send early.
		return stop(RetryAfterMissing, why+" and the fallback policy is "+string(FallbackStop))
	}
}

// budgetStop checks the budgets that are known before any wait is computed.
func budgetStop(s State, p Policy, now time.Time) (Decision, bool) {
	if s.Attempts >= p.MaxAttempts {
		return stop(AttemptBudgetExhausted, fmt.Sprintf("%d of %d attempts are used", s.Attempts, p.MaxAttempts)), true
	}
	if !now.Before(s.Deadline) {
		return stop(DeadlineExhausted, "the deadline "+stamp(s.Deadline)+" has passed"), true
	}
	return Decision{}, false
}

// schedule turns a wait into a Wait decision, or a stop when it cannot finish in
// time. A readyAt already scheduled is kept if it is later (I3), and rounding is up
// because the API stores microseconds and rounding down would send early (I1).
func schedule(s State, now time.Time, wait time.Duration, why WaitReason, detail string) Decision {
	readyAt := ceilMicro(later(now.Add(wait), s.ReadyAt))
	if !readyAt.Before(s.Deadline) {
		return stop(DeadlineExhausted, fmt.Sprintf("the next attempt could not be sent before the deadline %s (earliest %s)", stamp(s.Deadline), stamp(readyAt)))
	}
	return Decision{Kind: Wait, Why: why, ReadyAt: readyAt, Message: detail}
}

func stop(r StopReason, detail string) Decision {
	return Decision{Kind: Stop, Reason: r, Message: detail}
}

func escalateIfListed(d Decision, escalateOn []StopReason) Decision {
	if d.Kind == Stop && slices.Contains(escalateOn, d.Reason) {
		d.Kind = Escalate
		d.Message += "; the reason is listed in escalateOn"
	}
	return d
}

// finish fills Delay and turns the detail into one sentence led by the decision.
func finish(d Decision, now time.Time) Decision {
	switch d.Kind {
	case Wait:
		d.Delay = d.ReadyAt.Sub(now)
		d.Message = fmt.Sprintf("Wait until %s (%v): %s.", stamp(d.ReadyAt), d.Delay, d.Message)
	case Stop:
		d.Message = fmt.Sprintf("Stop with %s: %s.", d.Reason, d.Message)
	case Escalate:
		d.Message = fmt.Sprintf("Escalate with %s: %s; a human resolves the task.", d.Reason, d.Message)
	default:
		d.Message = fmt.Sprintf("%s: %s.", d.Kind, d.Message)
	}
	return d
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// ceilMicro rounds t up to a whole microsecond.
func ceilMicro(t time.Time) time.Time {
	r := t.Truncate(time.Microsecond)
	if r.Before(t) {
		r = r.Add(time.Microsecond)
	}
	return r
}

func stamp(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}
