package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/dispatch"
	"github.com/retry-operator/retry-operator/internal/planner"
)

// Events emits one Kubernetes Event per attempt and per decision. Reasons are
// low-cardinality CamelCase; Warning only for states that need a human. No
// header value and no body ever goes into an Event.
type Events struct {
	Recorder events.EventRecorder
}

func (e *Events) emit(task *v1alpha1.RetryTask, typ, reason, action, note string) {
	if e == nil || e.Recorder == nil {
		return
	}
	e.Recorder.Eventf(task, nil, typ, reason, action, "%s", note)
}

// attempt reports one attempt and the decision that followed, in one Event:
// Events are API server writes too, so there is one per attempt.
func (e *Events) attempt(task *v1alpha1.RetryTask, number int, r dispatch.Result) {
	what := string(r.Outcome)
	if r.Outcome == planner.Response {
		what = fmt.Sprintf("status %d", r.StatusCode)
	} else if r.Err != nil {
		what += ": " + r.Err.Error()
	}
	s := task.Status
	e.emit(task, eventType(s.Phase), string(s.Phase), "Attempt",
		fmt.Sprintf("attempt %d to %s: %s; %s: %s", number, hostOf(task.Spec.Request.URL), what, s.Reason, succeededMessage(task)))
}

func eventType(p v1alpha1.Phase) string {
	switch p {
	case v1alpha1.PhaseEscalated, v1alpha1.PhaseOutcomeUnknown, v1alpha1.PhaseFailed:
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}

func succeededMessage(task *v1alpha1.RetryTask) string {
	for _, c := range task.Status.Conditions {
		if c.Type == v1alpha1.ConditionWaiting && c.Status == "True" {
			return c.Message
		}
	}
	for _, c := range task.Status.Conditions {
		if c.Type == v1alpha1.ConditionSucceeded {
			return c.Message
		}
	}
	return ""
}

// decision reports a phase change made without an attempt (a lease that
// expired, a deadline reached while waiting, a resolution).
func (e *Events) decision(task *v1alpha1.RetryTask) {
	s := task.Status
	e.emit(task, eventType(s.Phase), string(s.Phase), "Decide", fmt.Sprintf("%s: %s", s.Reason, succeededMessage(task)))
}

func (e *Events) resolved(task *v1alpha1.RetryTask, action v1alpha1.ResolutionAction, note string) {
	e.emit(task, corev1.EventTypeNormal, resolutionEventReason, "Resolve", fmt.Sprintf("spec.resolution %s applied: %s", action, note))
}
