package controller

import (
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/dispatch"
	"github.com/retry-operator/retry-operator/internal/planner"
)

// Status builders: they change a task's status in memory from plain inputs and
// never call the API server.

const (
	historyLen = 10
	// maxHeaderEcho bounds header values copied into status.
	maxHeaderEcho = 128
)

// Reasons that are not planner stop or wait reasons.
const (
	ReasonInProgress        = "InProgress"
	ReasonDispatching       = "Dispatching"
	ReasonSucceeded         = "Succeeded"
	ReasonMarkedSucceeded   = "MarkedSucceeded"
	ReasonMarkedFailed      = "MarkedFailed"
	ReasonStatusCheckOK     = "StatusCheckSucceeded"
	ReasonResponseTooLarge  = "ResponseTooLarge"
	ReasonResponseNotStored = "ResponseNotStored"
	ReasonTimeout           = "AttemptOutcomeUnknown"
	ReasonLeaseExpired      = "LeaseExpired"
	ReasonInconclusive      = "StatusCheckInconclusive"
	ReasonResending         = "ResendingWithIdempotencyKey"
	ReasonCheckingStatus    = "CheckingStatus"
	ReasonNotEscalated      = "NotEscalated"
	ReasonKnown             = "OutcomeKnown"
	ReasonNotWaiting        = "NotWaiting"
	ModeSend                = "Send"
	ModeStatusCheck         = "StatusCheck"
	resolutionEventReason   = "Resolved"
	defaultMaxDelay         = 30 * time.Second
	defaultTimeout          = 30 * time.Second
	defaultMaxAttempts      = 3
	defaultMaxWait          = 60 * time.Second
	defaultInitialDelay     = time.Second
	defaultLeaseGrace       = 15 * time.Second
	defaultClaimLead        = 250 * time.Millisecond
)

func micro(t time.Time) *metav1.MicroTime {
	m := metav1.NewMicroTime(t)
	return &m
}

// deadlineOf is creation + activeDeadlineSeconds, or the absolute deadline.
func deadlineOf(t *v1alpha1.RetryTask) time.Time {
	if t.Spec.Deadline != nil {
		return t.Spec.Deadline.Time
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		return t.CreationTimestamp.Add(time.Duration(*t.Spec.ActiveDeadlineSeconds) * time.Second)
	}
	return t.CreationTimestamp.Time // the schema requires one; treat none as already due
}

// initStatus fills the status on first sight; the deadline is fixed here, once.
func initStatus(t *v1alpha1.RetryTask, now time.Time) {
	s := &t.Status
	if s.Deadline == nil {
		s.Deadline = micro(deadlineOf(t))
	}
	if s.Phase == "" {
		setPhase(t, v1alpha1.PhasePending, ReasonInProgress, "accepted; the first attempt is due", now)
	}
}

func timeoutOf(t *v1alpha1.RetryTask) time.Duration {
	if t.Spec.Request.TimeoutSeconds != nil {
		return time.Duration(*t.Spec.Request.TimeoutSeconds) * time.Second
	}
	return defaultTimeout
}

// plannerState maps the persisted status to the planner's view.
func plannerState(s *v1alpha1.RetryTaskStatus) planner.State {
	st := planner.State{Attempts: int(s.Attempts)}
	if s.ActiveAttempt != nil {
		st.ActiveAttempt = int(s.ActiveAttempt.Number)
	}
	if s.Deadline != nil {
		st.Deadline = s.Deadline.Time
	}
	if s.ReadyAt != nil {
		st.ReadyAt = s.ReadyAt.Time
	}
	return st
}

// plannerPolicy maps the spec to the planner's policy, applying the documented
// defaults for anything the API server did not default.
func plannerPolicy(t *v1alpha1.RetryTask) planner.Policy {
	p := planner.Policy{
		MaxAttempts: defaultMaxAttempts,
		MaxWait:     defaultMaxWait,
		RetryOn:     []int{http.StatusTooManyRequests},
		SafeToRetry: t.Spec.Request.Method != http.MethodPost && t.Spec.Request.Method != http.MethodPatch,
		Fallback:    planner.Fallback{Policy: planner.FallbackBackoff, InitialDelay: defaultInitialDelay},
	}
	if r := t.Spec.Retry; r != nil {
		if r.SafeToRetry != nil {
			p.SafeToRetry = *r.SafeToRetry
		}
		if r.MaxAttempts > 0 {
			p.MaxAttempts = int(r.MaxAttempts)
		}
		p.MaxWait = time.Duration(r.MaxWaitSeconds) * time.Second
		if len(r.RetryOn) > 0 {
			p.RetryOn = p.RetryOn[:0]
			for _, c := range r.RetryOn {
				p.RetryOn = append(p.RetryOn, int(c))
			}
		}
		if f := r.Fallback; f != nil {
			if f.Policy != "" {
				p.Fallback.Policy = planner.FallbackPolicy(f.Policy)
			}
			if f.InitialDelaySeconds > 0 {
				p.Fallback.InitialDelay = time.Duration(f.InitialDelaySeconds) * time.Second
			}
			if f.MaxDelaySeconds != nil {
				p.Fallback.MaxDelay = time.Duration(*f.MaxDelaySeconds) * time.Second
			}
		}
		for _, e := range r.EscalateOn {
			p.EscalateOn = append(p.EscalateOn, planner.StopReason(e))
		}
	}
	if p.Fallback.MaxDelay == 0 {
		p.Fallback.MaxDelay = min(defaultMaxDelay, p.MaxWait)
	}
	return p
}

// setPhase sets the phase, the reason column and the four conditions so that
// they always agree.
func setPhase(t *v1alpha1.RetryTask, phase v1alpha1.Phase, reason, message string, now time.Time) {
	s := &t.Status
	s.Phase, s.Reason = phase, reason
	gen := t.Generation
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: msg,
			ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(now),
		})
	}
	succeeded, succReason := metav1.ConditionUnknown, ReasonInProgress
	switch phase {
	case v1alpha1.PhaseSucceeded:
		succeeded, succReason = metav1.ConditionTrue, reason
	case v1alpha1.PhaseFailed:
		succeeded, succReason = metav1.ConditionFalse, reason
	case v1alpha1.PhaseDispatching:
		succReason = ReasonDispatching
	case v1alpha1.PhaseEscalated, v1alpha1.PhaseOutcomeUnknown:
		succReason = string(phase) // held for a human, not in progress
	}
	set(v1alpha1.ConditionSucceeded, succeeded, succReason, message)
	if phase == v1alpha1.PhaseWaiting {
		set(v1alpha1.ConditionWaiting, metav1.ConditionTrue, reason, message)
	} else {
		set(v1alpha1.ConditionWaiting, metav1.ConditionFalse, ReasonNotWaiting, "no retry is scheduled")
	}
	if phase == v1alpha1.PhaseEscalated {
		set(v1alpha1.ConditionEscalated, metav1.ConditionTrue, reason, message+"; set spec.resolution to act")
	} else {
		set(v1alpha1.ConditionEscalated, metav1.ConditionFalse, ReasonNotEscalated, "no human action is needed")
	}
	switch {
	case phase == v1alpha1.PhaseOutcomeUnknown:
		set(v1alpha1.ConditionOutcomeUnknown, metav1.ConditionTrue, reason, message)
	case phase == v1alpha1.PhaseDispatching && meta.IsStatusConditionTrue(s.Conditions, v1alpha1.ConditionOutcomeUnknown):
		// A resend of an unknown attempt is in flight: it stays unknown until
		// the resend's own result arrives.
	default:
		set(v1alpha1.ConditionOutcomeUnknown, metav1.ConditionFalse, ReasonKnown, "every attempt's outcome is known")
	}
	s.ObservedGeneration = gen
}

// claimAttempt records the attempt about to be sent: the claim written before
// any byte goes out (I4).
func claimAttempt(t *v1alpha1.RetryTask, st planner.State, now time.Time, grace time.Duration) {
	s := &t.Status
	s.Attempts = int32(st.Attempts)
	s.ReadyAt = nil
	s.ActiveAttempt = &v1alpha1.ActiveAttempt{
		Number:         int32(st.ActiveAttempt),
		StartedAt:      metav1.NewMicroTime(now),
		LeaseExpiresAt: *micro(now.Add(timeoutOf(t) + grace)),
		Mode:           ModeSend,
	}
	setPhase(t, v1alpha1.PhaseDispatching, ReasonDispatching,
		fmt.Sprintf("attempt %d of %d is being sent", st.ActiveAttempt, plannerPolicy(t).MaxAttempts), now)
}

// claimStatusCheck records a status-check probe of the last, unknown attempt.
func claimStatusCheck(t *v1alpha1.RetryTask, now time.Time, grace time.Duration) {
	t.Status.ActiveAttempt = &v1alpha1.ActiveAttempt{
		Number:         t.Status.Attempts,
		StartedAt:      metav1.NewMicroTime(now),
		LeaseExpiresAt: *micro(now.Add(timeoutOf(t) + grace)),
		Mode:           ModeStatusCheck,
	}
	setPhase(t, v1alpha1.PhaseOutcomeUnknown, ReasonCheckingStatus,
		fmt.Sprintf("checking whether attempt %d was processed", t.Status.Attempts), now)
}

// recordResult stores what the server said about the active attempt.
func recordResult(t *v1alpha1.RetryTask, res dispatch.Result, now time.Time) {
	s := &t.Status
	n := s.Attempts
	sentAt := metav1.NewMicroTime(now)
	if s.ActiveAttempt != nil {
		n, sentAt = s.ActiveAttempt.Number, s.ActiveAttempt.StartedAt
	}
	if !res.SentAt.IsZero() {
		// An attempt may be claimed a little before its send: record the send.
		sentAt = metav1.NewMicroTime(res.SentAt)
	}
	if res.Outcome == planner.Response {
		lr := &v1alpha1.LastResponse{
			Attempt:    n,
			StatusCode: int32(res.StatusCode),
			Date:       bounded(res.Header.Get("Date")),
			RequestID:  bounded(requestID(res.Header)),
			ReceivedAt: metav1.NewMicroTime(res.ReceivedAt),
		}
		s.LastResponse = lr
	}
	s.History = append(s.History, v1alpha1.AttemptRecord{
		Number: n, SentAt: sentAt, Outcome: string(res.Outcome), StatusCode: int32(res.StatusCode),
	})
	if len(s.History) > historyLen {
		s.History = s.History[len(s.History)-historyLen:]
	}
	s.ActiveAttempt = nil
}

func requestID(h http.Header) string {
	if v := h.Get("X-Request-Id"); v != "" {
		return v
	}
	return h.Get("Request-Id")
}

func bounded(v string) string {
	if len(v) > maxHeaderEcho {
		return v[:maxHeaderEcho]
	}
	return v
}

// applyDecision moves the task to the phase the planner decided.
func applyDecision(t *v1alpha1.RetryTask, d planner.Decision, now time.Time) {
	s := &t.Status
	if d.RetryAfter != nil && s.LastResponse != nil {
		s.LastResponse.RetryAfter = d.RetryAfter.Raw
		s.LastResponse.RetryAfterSource = string(d.RetryAfter.Source)
	}
	if n := len(s.History); n > 0 {
		s.History[n-1].Decision = decisionLabel(d)
	}
	switch d.Kind {
	case planner.Succeed:
		s.ReadyAt = nil
		setPhase(t, v1alpha1.PhaseSucceeded, ReasonSucceeded, d.Message, now)
	case planner.Wait:
		s.ReadyAt = micro(d.ReadyAt)
		setPhase(t, v1alpha1.PhaseWaiting, string(d.Why), d.Message, now)
	case planner.Stop:
		setPhase(t, v1alpha1.PhaseFailed, string(d.Reason), d.Message, now)
	case planner.Escalate:
		setPhase(t, v1alpha1.PhaseEscalated, string(d.Reason), d.Message, now)
	case planner.Reconcile:
		setPhase(t, v1alpha1.PhaseOutcomeUnknown, ReasonTimeout, d.Message, now)
	}
}

func decisionLabel(d planner.Decision) string {
	switch d.Kind {
	case planner.Wait:
		return string(d.Kind) + "/" + string(d.Why)
	case planner.Stop, planner.Escalate:
		return string(d.Kind) + "/" + string(d.Reason)
	}
	return string(d.Kind)
}

// stopOrEscalate ends the task with reason, escalating when escalateOn lists it.
func stopOrEscalate(t *v1alpha1.RetryTask, reason planner.StopReason, message string, now time.Time) {
	for _, e := range plannerPolicy(t).EscalateOn {
		if e == reason {
			setPhase(t, v1alpha1.PhaseEscalated, string(reason), message, now)
			return
		}
	}
	setPhase(t, v1alpha1.PhaseFailed, string(reason), message, now)
}

// expireLease turns an attempt whose lease ran out with no result into an
// unknown outcome (I5): it may have reached the server.
// It returns the explanation.
func expireLease(t *v1alpha1.RetryTask, now time.Time) string {
	a := t.Status.ActiveAttempt
	if a.Mode == ModeStatusCheck {
		t.Status.ActiveAttempt = nil
		msg := fmt.Sprintf("the status check of attempt %d got no result before its lease expired", a.Number)
		setPhase(t, v1alpha1.PhaseOutcomeUnknown, ReasonInconclusive, msg, now)
		return msg
	}
	recordResult(t, dispatch.Result{Outcome: planner.Unknown}, now)
	msg := fmt.Sprintf("attempt %d was claimed at %s and no result was recorded before its lease expired at %s; it may have reached the server",
		a.Number, a.StartedAt.UTC().Format(time.RFC3339Nano), a.LeaseExpiresAt.UTC().Format(time.RFC3339Nano))
	setPhase(t, v1alpha1.PhaseOutcomeUnknown, ReasonLeaseExpired, msg, now)
	t.Status.History[len(t.Status.History)-1].Decision = string(planner.Reconcile)
	return msg
}
