// Package planner decides what happens after each attempt of a task. It is pure:
// plain Go values in, a Decision out, with `now` and the jitter source passed in.
// No Kubernetes types, no HTTP, no goroutines.
package planner

import (
	"time"

	"github.com/retry-operator/retry-operator/internal/retryafter"
)

// OutcomeKind says how far an attempt got.
type OutcomeKind string

const (
	// Response means a status line arrived.
	Response OutcomeKind = "Response"
	// NotSent means the attempt failed before any request byte was written, so the
	// server never saw it.
	NotSent OutcomeKind = "NotSent"
	// Unknown means request bytes were written and no status line arrived
	// (timeout, reset, EOF, or a crash between claim and result).
	Unknown OutcomeKind = "Unknown"
)

// Outcome is the result of one attempt, as the dispatcher classified it.
type Outcome struct {
	Kind OutcomeKind
	// Attempt is the number of the attempt this outcome belongs to. An outcome
	// for an attempt that is not the active one is a duplicate and is ignored.
	Attempt    int
	StatusCode int
	// RetryAfter holds every Retry-After header line of the response, in order;
	// nil when the header is absent.
	RetryAfter []string
	// Date holds every Date header line of the response.
	Date []string
}

// State is what the task has recorded so far.
type State struct {
	// Attempts counts the attempts claimed so far, including the one in flight.
	Attempts int
	// ActiveAttempt is the number of the attempt in flight, 0 when none is.
	ActiveAttempt int
	// Deadline is absolute and never extended.
	Deadline time.Time
	// ReadyAt is the earliest next send already scheduled; zero when none is.
	ReadyAt time.Time
}

// FallbackPolicy says what to do when a retryable response carries no Retry-After.
type FallbackPolicy string

const (
	FallbackBackoff  FallbackPolicy = "Backoff"
	FallbackStop     FallbackPolicy = "Stop"
	FallbackEscalate FallbackPolicy = "Escalate"
)

// Fallback is the local backoff used when the server gave no wait, and for NotSent.
type Fallback struct {
	Policy       FallbackPolicy
	InitialDelay time.Duration
	MaxDelay     time.Duration
}

// Policy is the task's retry policy.
type Policy struct {
	MaxAttempts int
	// MaxWait is the longest single wait the task accepts; a longer server wait stops.
	MaxWait time.Duration
	// RetryOn lists retryable statuses; 429 is always retryable whether listed or not.
	RetryOn     []int
	SafeToRetry bool
	Fallback    Fallback
	// EscalateOn lists stop reasons that escalate to a human instead of failing.
	EscalateOn []StopReason
}

// DecisionKind is what the operator does next.
type DecisionKind string

const (
	Succeed   DecisionKind = "Succeed"
	Wait      DecisionKind = "Wait"
	Stop      DecisionKind = "Stop"
	Escalate  DecisionKind = "Escalate"
	Reconcile DecisionKind = "Reconcile"
	// Ignore means the outcome is a duplicate or stale: the state is unchanged.
	Ignore DecisionKind = "Ignore"
)

// WaitReason says who asked for a wait. Values match the Waiting condition reasons.
type WaitReason string

const (
	ServerRequested WaitReason = "ServerRequested"
	// WaitFallbackBackoff is named with a Wait prefix (like WaitNotSent) because
	// FallbackBackoff is the FallbackPolicy constant.
	WaitFallbackBackoff WaitReason = "FallbackBackoff"
	WaitNotSent         WaitReason = "NotSent"
)

// StopReason names why a task stops. Values are the API's stop reasons.
type StopReason string

const (
	AttemptBudgetExhausted StopReason = "AttemptBudgetExhausted"
	DeadlineExhausted      StopReason = "DeadlineExhausted"
	WaitBudgetExceeded     StopReason = "WaitBudgetExceeded"
	InvalidRetryAfter      StopReason = "InvalidRetryAfter"
	RetryAfterMissing      StopReason = "RetryAfterMissing"
	RetryNotAuthorized     StopReason = "RetryNotAuthorized"
	NonRetryableStatus     StopReason = "NonRetryableStatus"
	Abandoned              StopReason = "Abandoned"
)

// StopReasons lists every stop reason, in documentation order.
var StopReasons = []StopReason{
	AttemptBudgetExhausted, DeadlineExhausted, WaitBudgetExceeded, InvalidRetryAfter,
	RetryAfterMissing, RetryNotAuthorized, NonRetryableStatus, Abandoned,
}

// Decision is the planner's answer.
type Decision struct {
	Kind DecisionKind
	// Why is set for Wait.
	Why WaitReason
	// Reason is set for Stop and Escalate.
	Reason StopReason
	// ReadyAt (Wait only) is the earliest next send, rounded up to the microsecond.
	ReadyAt time.Time
	// Delay (Wait only) is ReadyAt - now.
	Delay time.Duration
	// RetryAfter is the parsed header when one was considered (Response outcomes
	// on the retry path), otherwise nil.
	RetryAfter *retryafter.Value
	// Message is one human sentence explaining the decision, with no secrets.
	Message string
}

// Rand is the jitter source; *math/rand/v2.Rand satisfies it.
type Rand interface {
	Int64N(n int64) int64
}

// ClaimResult says whether an attempt may be sent now, and if not, why.
type ClaimResult string

const (
	Claimed ClaimResult = "Claimed"
	// NotDue: readyAt has not passed yet.
	NotDue ClaimResult = "NotDue"
	// Busy: an attempt is already in flight.
	Busy ClaimResult = "Busy"
	// DeadlinePassed: now >= deadline; the task stops with DeadlineExhausted.
	DeadlinePassed ClaimResult = "DeadlinePassed"
	// BudgetSpent: attempts >= maxAttempts; the task stops with AttemptBudgetExhausted.
	BudgetSpent ClaimResult = "BudgetSpent"
)
