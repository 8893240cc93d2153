package planner

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/retry-operator/retry-operator/internal/retryafter"
)

// FuzzPlan checks the invariants of every decision over arbitrary inputs: no panic;
// a Wait is never earlier than the server asked (I1), never at or after the
// deadline, never earlier than a readyAt already scheduled (I3), and within the
// attempt budget (I2).
func FuzzPlan(f *testing.F) {
	f.Add(uint8(0), 429, "10", true, "", 1, 1, 1, 3, int64(60e9), int64(600e9), int64(0), true, uint8(0), int64(1e9), int64(30e9), uint64(1), int64(0), uint8(0))
	f.Add(uint8(0), 429, "Mon, 30 Nov 2026 10:00:30 GMT", true, "Mon, 30 Nov 2026 09:59:50 GMT", 2, 2, 2, 3, int64(60e9), int64(600e9), int64(45e9), true, uint8(0), int64(1e9), int64(30e9), uint64(7), int64(1), uint8(0xff))
	f.Add(uint8(1), 0, "", false, "", 1, 1, 1, 3, int64(60e9), int64(1e8), int64(0), false, uint8(1), int64(1e9), int64(30e9), uint64(2), int64(999), uint8(4))
	f.Add(uint8(0), 503, "", false, "", 1, 1, 1, 3, int64(60e9), int64(600e9), int64(0), true, uint8(2), int64(1e9), int64(30e9), uint64(3), int64(0), uint8(0))
	f.Fuzz(func(t *testing.T, kind uint8, status int, ra string, raPresent bool, date string,
		attempts, active, attempt, maxAttempts int, maxWait, deadline, readyAt int64, safe bool,
		fallback uint8, initial, maxDelay int64, seed uint64, nowOffset int64, escalate uint8) {
		at := now.Add(time.Duration(nowOffset))
		s := State{Attempts: attempts, ActiveAttempt: active, Deadline: at.Add(time.Duration(deadline))}
		if readyAt != 0 {
			s.ReadyAt = at.Add(time.Duration(readyAt))
		}
		o := Outcome{Kind: []OutcomeKind{Response, NotSent, Unknown, "Other"}[kind%4], Attempt: attempt, StatusCode: status}
		if raPresent {
			o.RetryAfter = []string{ra}
		}
		if date != "" {
			o.Date = []string{date}
		}
		p := Policy{
			MaxAttempts: maxAttempts, MaxWait: time.Duration(maxWait), RetryOn: []int{503, status}, SafeToRetry: safe,
			Fallback: Fallback{
				Policy:       []FallbackPolicy{FallbackBackoff, FallbackStop, FallbackEscalate, ""}[fallback%4],
				InitialDelay: time.Duration(initial), MaxDelay: time.Duration(maxDelay),
			},
		}
		for i, r := range StopReasons {
			if escalate&(1<<i) != 0 {
				p.EscalateOn = append(p.EscalateOn, r)
			}
		}
		d := Plan(s, o, p, at, rand.New(rand.NewPCG(seed, seed)))
		checkInvariants(t, s, o, p, at, d)
	})
}

func checkInvariants(t *testing.T, s State, o Outcome, p Policy, at time.Time, d Decision) {
	t.Helper()
	if d.Message == "" {
		t.Fatalf("%s without a message", d.Kind)
	}
	if stale := s.ActiveAttempt == 0 || o.Attempt != s.ActiveAttempt; stale != (d.Kind == Ignore) {
		t.Fatalf("stale=%v but decision %s", stale, d.Message)
	}
	switch d.Kind {
	case Ignore, Reconcile, Succeed:
		if d.Why != "" || d.Reason != "" || !d.ReadyAt.IsZero() || d.Delay != 0 {
			t.Fatalf("%s carries wait or stop fields: %+v", d.Kind, d)
		}
	case Stop, Escalate:
		if !slices.Contains(StopReasons, d.Reason) || d.Why != "" || !d.ReadyAt.IsZero() {
			t.Fatalf("bad %s: %+v", d.Kind, d)
		}
		if d.Kind == Stop && slices.Contains(p.EscalateOn, d.Reason) {
			t.Fatalf("Stop with %s, which escalateOn lists", d.Reason)
		}
	case Wait:
		checkWait(t, s, o, p, at, d)
	default:
		t.Fatalf("unknown decision kind %q", d.Kind)
	}
}

func checkWait(t *testing.T, s State, o Outcome, p Policy, at time.Time, d Decision) {
	t.Helper()
	switch {
	case d.ReadyAt.Before(at):
		t.Fatalf("readyAt %v before now %v", d.ReadyAt, at)
	case !d.ReadyAt.Before(s.Deadline):
		t.Fatalf("readyAt %v not before deadline %v", d.ReadyAt, s.Deadline)
	case d.ReadyAt.Before(s.ReadyAt):
		t.Fatalf("readyAt %v earlier than the scheduled %v", d.ReadyAt, s.ReadyAt)
	case d.ReadyAt.Nanosecond()%1000 != 0:
		t.Fatalf("readyAt %v is not a whole microsecond", d.ReadyAt)
	case d.Delay != d.ReadyAt.Sub(at):
		t.Fatalf("delay %v != readyAt - now %v", d.Delay, d.ReadyAt.Sub(at))
	case s.Attempts >= p.MaxAttempts:
		t.Fatalf("Wait with %d of %d attempts used", s.Attempts, p.MaxAttempts)
	}
	switch d.Why {
	case ServerRequested:
		if d.RetryAfter == nil || !p.SafeToRetry {
			t.Fatalf("server wait without a header or authorization: %+v", d)
		}
		w := d.RetryAfter.Wait(at, o.Date)
		if w > p.MaxWait || d.ReadyAt.Before(at.Add(w)) {
			t.Fatalf("readyAt %v earlier than now + server wait %v (maxWait %v)", d.ReadyAt, w, p.MaxWait)
		}
	case WaitFallbackBackoff, WaitNotSent:
		if d.Why == WaitFallbackBackoff && (d.RetryAfter == nil || d.RetryAfter.Source != retryafter.Missing) {
			t.Fatalf("fallback backoff without a missing header: %+v", d)
		}
		// A local wait is bounded by the policy, unless an earlier schedule was later.
		limit := ceilMicro(later(at.Add(max(min(p.MaxWait, p.Fallback.MaxDelay), 0)), s.ReadyAt))
		if d.ReadyAt.After(limit) {
			t.Fatalf("local backoff readyAt %v beyond %v", d.ReadyAt, limit)
		}
	default:
		t.Fatalf("Wait without a reason: %+v", d)
	}
}
