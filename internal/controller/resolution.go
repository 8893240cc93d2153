package controller

import (
	"fmt"
	"time"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/planner"
)

// ReasonResumed is the reason of a task that spec.resolution Retry resumed.
const ReasonResumed = "Resumed"

// applyResolution applies spec.resolution once per generation. It waits while
// an attempt is in flight. It returns the resolution applied, or nil.
func applyResolution(t *v1alpha1.RetryTask, now time.Time) *v1alpha1.Resolution {
	res := t.Spec.Resolution
	if res == nil || t.Status.ResolvedGeneration >= t.Generation || t.Status.ActiveAttempt != nil {
		return nil
	}
	t.Status.ResolvedGeneration = t.Generation
	by := "by spec.resolution"
	if res.Note != "" {
		by += ": " + res.Note
	}
	switch res.Action {
	case v1alpha1.ResolutionMarkSucceeded:
		setPhase(t, v1alpha1.PhaseSucceeded, ReasonMarkedSucceeded, "marked succeeded "+by, now)
	case v1alpha1.ResolutionMarkFailed:
		setPhase(t, v1alpha1.PhaseFailed, ReasonMarkedFailed, "marked failed "+by, now)
	case v1alpha1.ResolutionAbandon:
		if t.Status.Phase == v1alpha1.PhaseSucceeded {
			return nil
		}
		setPhase(t, v1alpha1.PhaseFailed, string(planner.Abandoned), "abandoned "+by, now)
	case v1alpha1.ResolutionRetry:
		if t.Status.Phase == v1alpha1.PhaseSucceeded {
			return nil // a call that succeeded is never sent again
		}
		// The stored readyAt (a server's wait included) still holds, and so do
		// the deadline and the attempt budget: Claim checks them.
		msg := "resumed " + by
		if t.Status.ReadyAt != nil && t.Status.ReadyAt.After(now) {
			msg += fmt.Sprintf("; not before %s", t.Status.ReadyAt.UTC().Format(time.RFC3339Nano))
		}
		setPhase(t, v1alpha1.PhasePending, ReasonResumed, msg, now)
	default:
		return nil
	}
	return res
}
