package controller

import (
	"testing"
	"time"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/planner"
)

// A server wait is kept for a later spec.resolution Retry only when the
// status was retryable for the task: a 503 (not in retryOn) with
// Retry-After: 120 fails NonRetryableStatus with no readyAt and no
// lastResponse.retryAfter, so on-call's Retry sends at once, 119 s before the
// server's instant (I1: a server delay is never reduced).
func TestReviewRetryResolutionIgnoresServerWaitOfNonRetryableStatus(t *testing.T) {
	now := t0.Add(300 * time.Millisecond)
	rt := claimed(t)
	applyAttemptResult(rt, 1, response(503, map[string]string{"Retry-After": "120"}, now), fixedRand{}, now)
	if rt.Status.Phase != v1alpha1.PhaseFailed || rt.Status.Reason != "NonRetryableStatus" {
		t.Fatalf("phase=%s reason=%s", rt.Status.Phase, rt.Status.Reason)
	}
	rt.Spec.Resolution = &v1alpha1.Resolution{Action: v1alpha1.ResolutionRetry}
	rt.Generation = 2
	later := now.Add(time.Second)
	if applyResolution(rt, later) == nil {
		t.Fatal("resolution not applied")
	}
	if _, res := planner.Claim(plannerState(&rt.Status), plannerPolicy(rt).MaxAttempts, later); res == planner.Claimed {
		t.Fatalf("Retry resolution claims attempt 2 at %v although the server said Retry-After: 120 at %v (readyAt=%v, lastResponse=%+v)",
			later.Sub(now), now, rt.Status.ReadyAt, rt.Status.LastResponse)
	}
}
