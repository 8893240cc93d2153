package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RetryTaskSpec describes one HTTP call and how it may be retried. It is
// immutable after creation, except for resolution.
//
// +kubebuilder:validation:XValidation:rule="has(self.deadline) != has(self.activeDeadlineSeconds)",message="set exactly one of spec.deadline or spec.activeDeadlineSeconds"
// +kubebuilder:validation:XValidation:rule="!(self.request.method in ['POST', 'PATCH']) || (has(self.retry) && has(self.retry.safeToRetry))",message="spec.retry.safeToRetry must be set explicitly for POST and PATCH: true only if the server deduplicates or the call is safe to repeat"
// +kubebuilder:validation:XValidation:rule="!has(self.onUnknownOutcome) || !has(self.onUnknownOutcome.policy) || self.onUnknownOutcome.policy != 'ResendWithIdempotencyKey' || has(self.idempotencyKey)",message="spec.onUnknownOutcome.policy ResendWithIdempotencyKey requires spec.idempotencyKey"
// +kubebuilder:validation:XValidation:rule="self.request == oldSelf.request",message="spec.request is immutable; create a new RetryTask"
// +kubebuilder:validation:XValidation:rule="has(self.retry) == has(oldSelf.retry) && (!has(self.retry) || self.retry == oldSelf.retry)",message="spec.retry is immutable; create a new RetryTask"
// +kubebuilder:validation:XValidation:rule="has(self.idempotencyKey) == has(oldSelf.idempotencyKey) && (!has(self.idempotencyKey) || self.idempotencyKey == oldSelf.idempotencyKey) && has(self.idempotencyKeyHeader) == has(oldSelf.idempotencyKeyHeader) && (!has(self.idempotencyKeyHeader) || self.idempotencyKeyHeader == oldSelf.idempotencyKeyHeader)",message="spec.idempotencyKey and spec.idempotencyKeyHeader are immutable"
// +kubebuilder:validation:XValidation:rule="has(self.deadline) == has(oldSelf.deadline) && (!has(self.deadline) || self.deadline == oldSelf.deadline) && has(self.activeDeadlineSeconds) == has(oldSelf.activeDeadlineSeconds) && (!has(self.activeDeadlineSeconds) || self.activeDeadlineSeconds == oldSelf.activeDeadlineSeconds)",message="spec.deadline and spec.activeDeadlineSeconds are immutable: a deadline is never extended"
// +kubebuilder:validation:XValidation:rule="has(self.queue) == has(oldSelf.queue) && (!has(self.queue) || self.queue == oldSelf.queue)",message="spec.queue is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.response) == has(oldSelf.response) && (!has(self.response) || self.response == oldSelf.response)",message="spec.response is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.onUnknownOutcome) == has(oldSelf.onUnknownOutcome) && (!has(self.onUnknownOutcome) || self.onUnknownOutcome == oldSelf.onUnknownOutcome)",message="spec.onUnknownOutcome is immutable"
type RetryTaskSpec struct {
	// request is the HTTP call to make.
	// +required
	Request RequestSpec `json:"request"`

	// idempotencyKey is sent on every attempt in the idempotencyKeyHeader header,
	// so that a server that deduplicates can tell a resend from a new call.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	IdempotencyKey *string `json:"idempotencyKey,omitempty"`

	// idempotencyKeyHeader names the header that carries idempotencyKey.
	// +optional
	// +kubebuilder:default=Idempotency-Key
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[!#$%&'*+.^_|~0-9A-Za-z-]+$`
	IdempotencyKeyHeader *string `json:"idempotencyKeyHeader,omitempty"`

	// retry is the retry policy.
	// +optional
	// +kubebuilder:default={}
	Retry *RetryPolicy `json:"retry,omitempty"`

	// activeDeadlineSeconds is the task's deadline counted from its creation.
	// Exactly one of activeDeadlineSeconds and deadline is required.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=31536000
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// deadline is the absolute instant (RFC 3339) at or after which nothing is sent.
	// +optional
	Deadline *metav1.Time `json:"deadline,omitempty"`

	// queue names a RetryQueue in the same namespace whose limits apply before sending.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Queue *string `json:"queue,omitempty"`

	// response says where the successful response is kept.
	// +optional
	Response *ResponseTarget `json:"response,omitempty"`

	// onUnknownOutcome says how an attempt whose outcome is unknown is reconciled.
	// +optional
	// +kubebuilder:default={}
	OnUnknownOutcome *UnknownOutcomePolicy `json:"onUnknownOutcome,omitempty"`

	// resolution is how on-call resolves an escalated, held or unknown task.
	// It is applied once per generation.
	// +optional
	Resolution *Resolution `json:"resolution,omitempty"`
}

// RequestSpec is the HTTP request of every attempt.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.body) && has(self.bodyFrom))",message="set at most one of spec.request.body and spec.request.bodyFrom"
// +kubebuilder:validation:XValidation:rule="!(self.method in ['GET', 'HEAD', 'OPTIONS']) || !(has(self.body) || has(self.bodyFrom))",message="spec.request.body is not allowed for GET, HEAD or OPTIONS"
type RequestSpec struct {
	// method is the HTTP method.
	// +optional
	// +kubebuilder:default=GET
	// +kubebuilder:validation:Enum=GET;HEAD;OPTIONS;PUT;DELETE;POST;PATCH
	Method string `json:"method,omitempty"`

	// url is the absolute http or https URL to call.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",message="spec.request.url must be an absolute http:// or https:// URL with a host"
	URL string `json:"url"`

	// headers are sent on every attempt.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Headers []Header `json:"headers,omitempty"`

	// body is the request body, inline.
	// +optional
	// +kubebuilder:validation:MaxLength=262144
	Body *string `json:"body,omitempty"`

	// bodyFrom reads the request body from a Secret or ConfigMap at send time.
	// +optional
	BodyFrom *ValueSource `json:"bodyFrom,omitempty"`

	// timeoutSeconds bounds each attempt, from connect to the end of the response.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
}

// Header is one request header, given inline or read at send time.
//
// +kubebuilder:validation:XValidation:rule="has(self.value) != has(self.valueFrom)",message="a header needs exactly one of value and valueFrom"
// +kubebuilder:validation:XValidation:rule="!(self.name.lowerAscii() in ['host', 'content-length', 'transfer-encoding'])",message="header name must not be Host, Content-Length or Transfer-Encoding: the operator sets them from url and body"
type Header struct {
	// name is the header field name (an RFC 9110 token).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[!#$%&'*+.^_|~0-9A-Za-z-]+$`
	Name string `json:"name"`

	// value is the header value, inline. Do not put credentials here; use valueFrom.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Value *string `json:"value,omitempty"`

	// valueFrom reads the value from a Secret or ConfigMap at send time; it is
	// never stored or logged.
	// +optional
	ValueFrom *ValueSource `json:"valueFrom,omitempty"`
}

// ValueSource points at one key of a Secret or ConfigMap in the task's namespace.
//
// +kubebuilder:validation:XValidation:rule="has(self.secretKeyRef) != has(self.configMapKeyRef)",message="set exactly one of secretKeyRef and configMapKeyRef"
type ValueSource struct {
	// secretKeyRef selects a key of a Secret.
	// +optional
	SecretKeyRef *KeySelector `json:"secretKeyRef,omitempty"`
	// configMapKeyRef selects a key of a ConfigMap.
	// +optional
	ConfigMapKeyRef *KeySelector `json:"configMapKeyRef,omitempty"`
}

// KeySelector names an object in the task's namespace and one of its keys.
type KeySelector struct {
	// name of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// key within the object's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// RetryPolicy bounds retries.
//
// +kubebuilder:validation:XValidation:rule="!has(self.fallback) || !has(self.fallback.maxDelaySeconds) || self.fallback.maxDelaySeconds <= self.maxWaitSeconds",message="spec.retry.fallback.maxDelaySeconds must be <= spec.retry.maxWaitSeconds"
type RetryPolicy struct {
	// safeToRetry says the call may be sent again after a retryable response.
	// Required for POST and PATCH; defaults to true for the other methods.
	// +optional
	SafeToRetry *bool `json:"safeToRetry,omitempty"`

	// maxAttempts counts every attempt, the first included.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MaxAttempts int32 `json:"maxAttempts,omitempty"`

	// maxWaitSeconds is the longest single wait accepted. A server that asks for
	// a longer wait stops the task (WaitBudgetExceeded); the wait is never shortened.
	// +optional
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31536000
	MaxWaitSeconds int64 `json:"maxWaitSeconds,omitempty"`

	// retryOn lists the statuses that may be retried: 429 always is; 503 and other
	// 5xx only when listed.
	// +optional
	// +kubebuilder:default={429}
	// +listType=set
	// +kubebuilder:validation:MaxItems=101
	// +kubebuilder:validation:XValidation:rule="self.all(c, c == 429 || (c >= 500 && c <= 599))",message="spec.retry.retryOn accepts only 429 and 5xx statuses"
	RetryOn []int32 `json:"retryOn,omitempty"`

	// fallback is used when a retryable response carries no Retry-After.
	// +optional
	// +kubebuilder:default={}
	Fallback *FallbackSpec `json:"fallback,omitempty"`

	// escalateOn lists stop reasons that page a human (Escalated) instead of failing.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	EscalateOn []StopReason `json:"escalateOn,omitempty"`
}

// FallbackSpec is the local backoff used when the server gives no wait.
//
// +kubebuilder:validation:XValidation:rule="!has(self.maxDelaySeconds) || self.initialDelaySeconds <= self.maxDelaySeconds",message="spec.retry.fallback.initialDelaySeconds must be <= maxDelaySeconds"
type FallbackSpec struct {
	// policy is Backoff (exponential, full jitter), Stop or Escalate.
	// +optional
	// +kubebuilder:default=Backoff
	// +kubebuilder:validation:Enum=Backoff;Stop;Escalate
	Policy string `json:"policy,omitempty"`

	// initialDelaySeconds is the first backoff cap.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=31536000
	InitialDelaySeconds int64 `json:"initialDelaySeconds,omitempty"`

	// maxDelaySeconds caps the backoff; it must be <= maxWaitSeconds. When unset it
	// is 30 or maxWaitSeconds, whichever is smaller.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=31536000
	MaxDelaySeconds *int64 `json:"maxDelaySeconds,omitempty"`
}

// StopReason names why a task stopped.
// +kubebuilder:validation:Enum=AttemptBudgetExhausted;DeadlineExhausted;WaitBudgetExceeded;InvalidRetryAfter;RetryAfterMissing;RetryNotAuthorized;NonRetryableStatus;Abandoned
type StopReason string

// ResponseTarget says where the successful response is stored.
//
// +kubebuilder:validation:XValidation:rule="has(self.secretName) != has(self.configMapName)",message="spec.response needs exactly one of secretName and configMapName"
type ResponseTarget struct {
	// secretName is a Secret, created and owned by the task, that receives the body.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SecretName *string `json:"secretName,omitempty"`

	// configMapName is a ConfigMap, created and owned by the task, that receives the body.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ConfigMapName *string `json:"configMapName,omitempty"`

	// maxBodyBytes bounds the stored body; a larger body fails the task rather
	// than being stored truncated.
	// +optional
	// +kubebuilder:default=262144
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	MaxBodyBytes int64 `json:"maxBodyBytes,omitempty"`

	// keepHeaders are response headers stored next to the body.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=128
	// +kubebuilder:validation:items:Pattern=`^[!#$%&'*+.^_|~0-9A-Za-z-]+$`
	KeepHeaders []string `json:"keepHeaders,omitempty"`
}

// UnknownOutcomePolicy reconciles an attempt whose outcome is unknown.
//
// +kubebuilder:validation:XValidation:rule="!has(self.policy) || self.policy != 'StatusCheck' || has(self.statusCheck)",message="spec.onUnknownOutcome.statusCheck is required when policy is StatusCheck"
type UnknownOutcomePolicy struct {
	// policy is Manual (hold until spec.resolution), StatusCheck (probe
	// statusCheck.url) or ResendWithIdempotencyKey (resend with the same key).
	// +optional
	// +kubebuilder:default=Manual
	// +kubebuilder:validation:Enum=Manual;StatusCheck;ResendWithIdempotencyKey
	Policy string `json:"policy,omitempty"`

	// statusCheck asks the server whether the call was processed.
	// +optional
	StatusCheck *StatusCheck `json:"statusCheck,omitempty"`
}

// StatusCheck is a GET that tells whether an unknown attempt was processed. It is
// sent with the request's headers and idempotency key.
type StatusCheck struct {
	// url is the absolute http or https URL to probe.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",message="spec.onUnknownOutcome.statusCheck.url must be an absolute http:// or https:// URL with a host"
	URL string `json:"url"`

	// succeededStatuses mean the call was processed: the task succeeds.
	// +optional
	// +kubebuilder:default={200}
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Minimum=100
	// +kubebuilder:validation:items:Maximum=599
	SucceededStatuses []int32 `json:"succeededStatuses,omitempty"`

	// notFoundStatuses mean the call was not processed: it may be resent within budgets.
	// +optional
	// +kubebuilder:default={404}
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Minimum=100
	// +kubebuilder:validation:items:Maximum=599
	NotFoundStatuses []int32 `json:"notFoundStatuses,omitempty"`
}

// Resolution is on-call's decision for a held task.
type Resolution struct {
	// action is Retry (resume within deadline and readyAt), Abandon (Failed,
	// Abandoned), MarkSucceeded or MarkFailed.
	// +required
	// +kubebuilder:validation:Enum=Retry;Abandon;MarkSucceeded;MarkFailed
	Action ResolutionAction `json:"action"`

	// note says why, for the record.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Note string `json:"note,omitempty"`
}

// ResolutionAction is what on-call decided.
type ResolutionAction string

// Resolution actions.
const (
	ResolutionRetry         ResolutionAction = "Retry"
	ResolutionAbandon       ResolutionAction = "Abandon"
	ResolutionMarkSucceeded ResolutionAction = "MarkSucceeded"
	ResolutionMarkFailed    ResolutionAction = "MarkFailed"
)

// Phase is where a task is in its life.
// +kubebuilder:validation:Enum=Pending;Waiting;Dispatching;Succeeded;Failed;Escalated;OutcomeUnknown
type Phase string

// Phases.
const (
	PhasePending        Phase = "Pending"
	PhaseWaiting        Phase = "Waiting"
	PhaseDispatching    Phase = "Dispatching"
	PhaseSucceeded      Phase = "Succeeded"
	PhaseFailed         Phase = "Failed"
	PhaseEscalated      Phase = "Escalated"
	PhaseOutcomeUnknown Phase = "OutcomeUnknown"
)

// Condition types.
const (
	// ConditionSucceeded is True on success, False with the stop reason when the
	// task failed, Unknown while it is in progress.
	ConditionSucceeded = "Succeeded"
	// ConditionWaiting is True while a retry is scheduled; the reason says why.
	ConditionWaiting = "Waiting"
	// ConditionEscalated is True when a human must act through spec.resolution.
	ConditionEscalated = "Escalated"
	// ConditionOutcomeUnknown is True when an attempt's result is unknown.
	ConditionOutcomeUnknown = "OutcomeUnknown"
)

// RetryTaskStatus is what the operator has done and decided.
type RetryTaskStatus struct {
	// phase summarises the task.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// reason is the latest stop or wait reason, for `kubectl get`.
	// +optional
	Reason string `json:"reason,omitempty"`

	// attempts counts the attempts claimed, the one in flight included.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// deadline is fixed at creation and never extended.
	// +optional
	Deadline *metav1.MicroTime `json:"deadline,omitempty"`

	// readyAt is the next allowed send; it is never rounded down.
	// +optional
	ReadyAt *metav1.MicroTime `json:"readyAt,omitempty"`

	// activeAttempt is present only while an attempt is in flight.
	// +optional
	ActiveAttempt *ActiveAttempt `json:"activeAttempt,omitempty"`

	// lastResponse describes the latest response received.
	// +optional
	LastResponse *LastResponse `json:"lastResponse,omitempty"`

	// history holds the last 10 attempts, oldest first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	History []AttemptRecord `json:"history,omitempty"`

	// resolvedGeneration is the generation whose spec.resolution was applied.
	// +optional
	ResolvedGeneration int64 `json:"resolvedGeneration,omitempty"`

	// observedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Succeeded, Waiting, Escalated, OutcomeUnknown.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ActiveAttempt is the attempt in flight.
type ActiveAttempt struct {
	// number of the attempt, from 1.
	Number int32 `json:"number"`
	// startedAt is when the attempt was claimed.
	StartedAt metav1.MicroTime `json:"startedAt"`
	// leaseExpiresAt: with no result by then, the outcome is unknown.
	LeaseExpiresAt metav1.MicroTime `json:"leaseExpiresAt"`
	// mode is Send for the request itself, StatusCheck for a probe.
	// +optional
	Mode string `json:"mode,omitempty"`
}

// LastResponse is the latest response received, without its body.
type LastResponse struct {
	Attempt    int32 `json:"attempt"`
	StatusCode int32 `json:"statusCode"`
	// retryAfter is the raw header, bounded.
	// +optional
	RetryAfter string `json:"retryAfter,omitempty"`
	// retryAfterSource is DeltaSeconds, HTTPDate, Missing or Invalid.
	// +optional
	RetryAfterSource string `json:"retryAfterSource,omitempty"`
	// date is the raw Date header, bounded.
	// +optional
	Date string `json:"date,omitempty"`
	// requestID is X-Request-Id (or Request-Id), bounded.
	// +optional
	RequestID string `json:"requestID,omitempty"`
	// receivedAt is when the status line arrived.
	ReceivedAt metav1.MicroTime `json:"receivedAt"`
}

// AttemptRecord is one line of history.
type AttemptRecord struct {
	Number int32 `json:"number"`
	// sentAt is when the request was sent; for an attempt that was not sent,
	// when it was claimed.
	SentAt metav1.MicroTime `json:"sentAt"`
	// outcome is Response, NotSent or Unknown.
	Outcome string `json:"outcome"`
	// +optional
	StatusCode int32 `json:"statusCode,omitempty"`
	// decision is what followed, e.g. "Wait/ServerRequested" or "Stop/NonRetryableStatus".
	// +optional
	Decision string `json:"decision,omitempty"`
}

// RetryTask is one HTTP call run with durable, budgeted retries.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rt,categories=retryoperator
// +kubebuilder:selectablefield:JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Attempts",type=integer,JSONPath=`.status.attempts`
// +kubebuilder:printcolumn:name="Next",type=string,JSONPath=`.status.readyAt`
// +kubebuilder:printcolumn:name="Deadline",type=string,JSONPath=`.status.deadline`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RetryTask struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec RetryTaskSpec `json:"spec"`
	// +optional
	Status RetryTaskStatus `json:"status,omitempty"`
}

// RetryTaskList is a list of RetryTasks.
//
// +kubebuilder:object:root=true
type RetryTaskList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RetryTask `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RetryTask{}, &RetryTaskList{})
}
