package controller

import (
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/dispatch"
	"github.com/retry-operator/retry-operator/internal/planner"
)

// fixedRand always draws the top of the range, so backoff is deterministic.
type fixedRand struct{}

func (fixedRand) Int64N(n int64) int64 { return n - 1 }

func claimed(t *testing.T) *v1alpha1.RetryTask {
	t.Helper()
	rt := &v1alpha1.RetryTask{ObjectMeta: metav1.ObjectMeta{Generation: 1, CreationTimestamp: metav1.NewTime(t0)}}
	rt.Spec.ActiveDeadlineSeconds = ptr.To[int64](600)
	rt.Spec.Request.TimeoutSeconds = ptr.To[int32](30)
	initStatus(rt, t0)
	st, res := planner.Claim(plannerState(&rt.Status), 3, t0)
	if res != planner.Claimed {
		t.Fatalf("claim: %s", res)
	}
	claimAttempt(rt, st, t0, 15*time.Second)
	return rt
}

func TestClaimRecordsTheAttemptAndItsLease(t *testing.T) {
	rt := claimed(t)
	a := rt.Status.ActiveAttempt
	if rt.Status.Attempts != 1 || a == nil || a.Number != 1 || !a.LeaseExpiresAt.Time.Equal(t0.Add(45*time.Second)) {
		t.Fatalf("claim: attempts=%d active=%+v", rt.Status.Attempts, a)
	}
	if !rt.Status.Deadline.Time.Equal(t0.Add(10*time.Minute)) || rt.Status.Phase != v1alpha1.PhaseDispatching {
		t.Fatalf("status: %+v", rt.Status)
	}
	if len(rt.Status.Conditions) != 4 {
		t.Fatalf("want the four condition types, got %+v", rt.Status.Conditions)
	}
}

func response(code int, header map[string]string, received time.Time) dispatch.Result {
	h := http.Header{}
	for k, v := range header {
		h.Set(k, v)
	}
	return dispatch.Result{Outcome: planner.Response, StatusCode: code, Header: h, ReceivedAt: received}
}

func TestApplyAttemptResult(t *testing.T) {
	now := t0.Add(300 * time.Millisecond)
	cases := map[string]struct {
		result  dispatch.Result
		phase   v1alpha1.Phase
		reason  string
		readyAt time.Time
	}{
		"429 seconds": {
			result: response(429, map[string]string{"Retry-After": "2"}, now),
			phase:  v1alpha1.PhaseWaiting, reason: "ServerRequested", readyAt: now.Add(2 * time.Second),
		},
		"429 above maxWait keeps the server's instant": {
			result: response(429, map[string]string{"Retry-After": "3600"}, now),
			phase:  v1alpha1.PhaseFailed, reason: "WaitBudgetExceeded", readyAt: now.Add(time.Hour),
		},
		"body too large": {
			result: dispatch.Result{Outcome: planner.Response, StatusCode: 200, BodyTooLarge: true, ReceivedAt: now},
			phase:  v1alpha1.PhaseFailed, reason: ReasonResponseTooLarge,
		},
		"unknown is held, never retried": {
			result: dispatch.Result{Outcome: planner.Unknown, ReceivedAt: now},
			phase:  v1alpha1.PhaseOutcomeUnknown, reason: ReasonTimeout,
		},
		"not sent backs off": {
			result: dispatch.Result{Outcome: planner.NotSent, ReceivedAt: now},
			phase:  v1alpha1.PhaseWaiting, reason: "NotSent", readyAt: now.Add(time.Second),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rt := claimed(t)
			applyAttemptResult(rt, 1, tc.result, fixedRand{}, now)
			s := rt.Status
			if s.Phase != tc.phase || s.Reason != tc.reason || s.ActiveAttempt != nil {
				t.Fatalf("phase=%s reason=%s active=%v; want %s %s", s.Phase, s.Reason, s.ActiveAttempt, tc.phase, tc.reason)
			}
			switch {
			case tc.readyAt.IsZero() && s.ReadyAt != nil:
				t.Fatalf("readyAt = %v, want none", s.ReadyAt)
			case !tc.readyAt.IsZero() && (s.ReadyAt == nil || s.ReadyAt.Time.Before(tc.readyAt.Add(-time.Microsecond))):
				t.Fatalf("readyAt = %v, want %v", s.ReadyAt, tc.readyAt)
			}
			if len(s.History) != 1 || s.History[0].Number != 1 || s.History[0].Outcome != string(tc.result.Outcome) {
				t.Fatalf("history = %+v", s.History)
			}
		})
	}
}

func TestHistoryKeepsTheLastTen(t *testing.T) {
	rt := claimed(t)
	for i := range 12 {
		rt.Status.ActiveAttempt = &v1alpha1.ActiveAttempt{Number: int32(i + 1)}
		recordResult(rt, dispatch.Result{Outcome: planner.NotSent}, t0)
	}
	if h := rt.Status.History; len(h) != 10 || h[0].Number != 3 || h[9].Number != 12 {
		t.Fatalf("history = %+v", h)
	}
}

func TestExpiredLeaseIsAnUnknownOutcome(t *testing.T) {
	rt := claimed(t)
	expireLease(rt, t0.Add(time.Minute))
	if rt.Status.Phase != v1alpha1.PhaseOutcomeUnknown || rt.Status.ActiveAttempt != nil ||
		condition(rt, v1alpha1.ConditionOutcomeUnknown).Status != metav1.ConditionTrue ||
		rt.Status.History[0].Outcome != string(planner.Unknown) {
		t.Fatalf("status: %+v", rt.Status)
	}
}

func TestResendKeepsOutcomeUnknownUntilAResultArrives(t *testing.T) {
	rt := claimed(t)
	rt.Spec.IdempotencyKey = ptr.To("k")
	rt.Spec.OnUnknownOutcome = &v1alpha1.UnknownOutcomePolicy{Policy: "ResendWithIdempotencyKey"}
	now := t0.Add(31 * time.Second)
	applyAttemptResult(rt, 1, dispatch.Result{Outcome: planner.Unknown, ReceivedAt: now}, fixedRand{}, now)
	if rt.Status.Phase != v1alpha1.PhaseWaiting || condition(rt, v1alpha1.ConditionOutcomeUnknown).Status != metav1.ConditionTrue {
		t.Fatalf("after unknown: %s, OutcomeUnknown=%s", rt.Status.Phase, condition(rt, v1alpha1.ConditionOutcomeUnknown).Status)
	}
	rt.Status.Attempts = 3 // budget spent: a further unknown cannot be resent and stays held
	rt.Status.ActiveAttempt = &v1alpha1.ActiveAttempt{Number: 3}
	applyAttemptResult(rt, 3, dispatch.Result{Outcome: planner.Unknown, ReceivedAt: now}, fixedRand{}, now)
	if rt.Status.Phase != v1alpha1.PhaseOutcomeUnknown {
		t.Fatalf("an unknown outcome with no budget left must stay OutcomeUnknown, got %s", rt.Status.Phase)
	}
}
