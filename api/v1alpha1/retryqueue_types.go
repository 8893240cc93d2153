package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RetryQueueSpec holds limits shared by every task that names the queue. They
// apply before sending.
type RetryQueueSpec struct {
	// maxInFlight bounds the attempts of this queue's tasks in flight at once.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxInFlight int32 `json:"maxInFlight,omitempty"`

	// maxDispatchesPerSecond is the token bucket's refill rate. Unset: no rate limit.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MaxDispatchesPerSecond *int32 `json:"maxDispatchesPerSecond,omitempty"`

	// burst is the token bucket's size; it defaults to maxDispatchesPerSecond.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	Burst *int32 `json:"burst,omitempty"`

	// pauseOnThrottle: a 429 (or a listed 503) with a server wait pauses dispatch
	// to that host for the whole queue until the server's instant.
	// +optional
	// +kubebuilder:default=true
	PauseOnThrottle *bool `json:"pauseOnThrottle,omitempty"`

	// retryBudgetPercent: retries (attempt 2 and later) may use at most this
	// share of the queue's dispatches over a sliding window. Unset: no budget.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	RetryBudgetPercent *int32 `json:"retryBudgetPercent,omitempty"`
}

// PausedHost is a host the queue does not send to until an instant.
type PausedHost struct {
	Host  string           `json:"host"`
	Until metav1.MicroTime `json:"until"`
}

// RetryQueueStatus is the queue's live state, as the manager holding it sees it.
type RetryQueueStatus struct {
	// inFlight counts the attempts of this queue in flight.
	// +optional
	InFlight int32 `json:"inFlight"`
	// waiting counts the due tasks held by this queue's limits.
	// +optional
	Waiting int32 `json:"waiting"`
	// pausedHosts lists hosts paused by a server's wait.
	// +optional
	// +listType=atomic
	PausedHosts []PausedHost `json:"pausedHosts,omitempty"`
	// paused is the number of paused hosts, for `kubectl get`.
	// +optional
	Paused int32 `json:"paused"`
	// observedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RetryQueue limits concurrency and rate for the tasks that name it, so that a
// burst of 429s never turns into a retry storm.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rq,categories=retryoperator
// +kubebuilder:printcolumn:name="InFlight",type=integer,JSONPath=`.status.inFlight`
// +kubebuilder:printcolumn:name="Waiting",type=integer,JSONPath=`.status.waiting`
// +kubebuilder:printcolumn:name="Paused",type=integer,JSONPath=`.status.paused`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RetryQueue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec RetryQueueSpec `json:"spec,omitempty"`
	// +optional
	Status RetryQueueStatus `json:"status,omitempty"`
}

// RetryQueueList is a list of RetryQueues.
//
// +kubebuilder:object:root=true
type RetryQueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RetryQueue `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RetryQueue{}, &RetryQueueList{})
}
