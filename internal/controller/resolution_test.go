package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func heldTask(phase v1alpha1.Phase, reason string, gen int64, action v1alpha1.ResolutionAction) *v1alpha1.RetryTask {
	rt := &v1alpha1.RetryTask{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
	rt.Spec.Resolution = &v1alpha1.Resolution{Action: action, Note: "ticket 7"}
	rt.Status.Deadline = micro(t0.Add(time.Hour))
	rt.Status.Attempts = 1
	rt.Status.ResolvedGeneration = 1
	setPhase(rt, phase, reason, "held", t0)
	return rt
}

func TestApplyResolution(t *testing.T) {
	later := t0.Add(90 * time.Second)
	cases := map[string]struct {
		task       *v1alpha1.RetryTask
		applied    bool
		phase      v1alpha1.Phase
		reason     string
		conditions map[string]metav1.ConditionStatus
	}{
		"abandon an escalated task": {
			task: heldTask(v1alpha1.PhaseEscalated, "WaitBudgetExceeded", 2, v1alpha1.ResolutionAbandon), applied: true,
			phase: v1alpha1.PhaseFailed, reason: "Abandoned",
			conditions: map[string]metav1.ConditionStatus{"Succeeded": "False", "Escalated": "False"},
		},
		"mark an unknown outcome succeeded": {
			task: heldTask(v1alpha1.PhaseOutcomeUnknown, ReasonTimeout, 2, v1alpha1.ResolutionMarkSucceeded), applied: true,
			phase: v1alpha1.PhaseSucceeded, reason: ReasonMarkedSucceeded,
			conditions: map[string]metav1.ConditionStatus{"Succeeded": "True", "OutcomeUnknown": "False"},
		},
		"mark failed": {
			task: heldTask(v1alpha1.PhaseOutcomeUnknown, ReasonTimeout, 2, v1alpha1.ResolutionMarkFailed), applied: true,
			phase: v1alpha1.PhaseFailed, reason: ReasonMarkedFailed,
			conditions: map[string]metav1.ConditionStatus{"Succeeded": "False", "OutcomeUnknown": "False"},
		},
		"retry resumes": {
			task: heldTask(v1alpha1.PhaseEscalated, "RetryAfterMissing", 2, v1alpha1.ResolutionRetry), applied: true,
			phase: v1alpha1.PhasePending, reason: ReasonResumed,
			conditions: map[string]metav1.ConditionStatus{"Succeeded": "Unknown", "Escalated": "False"},
		},
		"already applied for this generation": {
			task: heldTask(v1alpha1.PhaseEscalated, "WaitBudgetExceeded", 1, v1alpha1.ResolutionAbandon), applied: false,
			phase: v1alpha1.PhaseEscalated, reason: "WaitBudgetExceeded",
		},
		"a succeeded call is never retried": {
			task: heldTask(v1alpha1.PhaseSucceeded, ReasonSucceeded, 2, v1alpha1.ResolutionRetry), applied: false,
			phase: v1alpha1.PhaseSucceeded, reason: ReasonSucceeded,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := applyResolution(tc.task, later)
			if (res != nil) != tc.applied || tc.task.Status.Phase != tc.phase || tc.task.Status.Reason != tc.reason {
				t.Fatalf("applied=%v phase=%s reason=%s; want %v %s %s", res != nil, tc.task.Status.Phase, tc.task.Status.Reason, tc.applied, tc.phase, tc.reason)
			}
			for typ, want := range tc.conditions {
				if c := condition(tc.task, typ); c.Status != want {
					t.Errorf("%s = %s, want %s", typ, c.Status, want)
				}
			}
			if tc.applied && tc.task.Status.ResolvedGeneration != tc.task.Generation {
				t.Errorf("resolvedGeneration = %d, want %d", tc.task.Status.ResolvedGeneration, tc.task.Generation)
			}
		})
	}
}

// A resolution waits while an attempt is in flight: it never races a send.
func TestResolutionWaitsForTheAttemptInFlight(t *testing.T) {
	rt := heldTask(v1alpha1.PhaseDispatching, ReasonDispatching, 2, v1alpha1.ResolutionAbandon)
	rt.Status.ActiveAttempt = &v1alpha1.ActiveAttempt{Number: 1}
	if applyResolution(rt, t0) != nil || rt.Status.Phase != v1alpha1.PhaseDispatching {
		t.Fatalf("resolution applied during an attempt: %s", rt.Status.Phase)
	}
}

func condition(rt *v1alpha1.RetryTask, typ string) metav1.Condition {
	for _, c := range rt.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}
