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

func (e *Events) attemptStarted(task *v1alpha1.RetryTask, number int) {
	e.emit(task, corev1.EventTypeNormal, "AttemptStarted", "Send",
		fmt.Sprintf("sending attempt %d to %s", number, hostOf(task.Spec.Request.URL)))
}

func (e *Events) result(task *v1alpha1.RetryTask, number int, r dispatch.Result) {
	note := fmt.Sprintf("attempt %d: %s", number, r.Outcome)
	if r.Outcome == planner.Response {
		note = fmt.Sprintf("attempt %d: status %d", number, r.StatusCode)
	} else if r.Err != nil {
		note += ": " + r.Err.Error()
	}
	e.emit(task, corev1.EventTypeNormal, "AttemptFinished", "Receive", note)
}

// decision reports the phase the task is now in.
func (e *Events) decision(task *v1alpha1.RetryTask) {
	s := task.Status
	msg := ""
	for _, c := range s.Conditions {
		if c.Type == v1alpha1.ConditionSucceeded {
			msg = c.Message
		}
	}
	typ := corev1.EventTypeNormal
	switch s.Phase {
	case v1alpha1.PhaseEscalated, v1alpha1.PhaseOutcomeUnknown, v1alpha1.PhaseFailed:
		typ = corev1.EventTypeWarning
	}
	e.emit(task, typ, string(s.Phase), "Decide", fmt.Sprintf("%s: %s", s.Reason, msg))
}

func (e *Events) resolved(task *v1alpha1.RetryTask, action v1alpha1.ResolutionAction, note string) {
	e.emit(task, corev1.EventTypeNormal, resolutionEventReason, "Resolve", fmt.Sprintf("spec.resolution %s applied: %s", action, note))
}
