package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
)

// +kubebuilder:rbac:groups=retryoperator.dev,resources=retryqueues,verbs=get;list;watch
// +kubebuilder:rbac:groups=retryoperator.dev,resources=retryqueues/status,verbs=get;update;patch

// offer hands a due task to its queue. The queue sends it at once when its
// limits allow, or holds it (Waiting, QueueThrottled) and sends it later in
// readyAt order. The deadline is checked again at the claim, after the wait.
func (r *RetryTaskReconciler) offer(ctx context.Context, task, next *v1alpha1.RetryTask, now time.Time) (ctrl.Result, error) {
	untilDeadline := next.Status.Deadline.Sub(now)
	q, err := r.Queues.For(ctx, next.Namespace, *next.Spec.Queue)
	if err != nil {
		return ctrl.Result{}, err
	}
	if q == nil {
		setPhase(next, v1alpha1.PhaseWaiting, ReasonQueueThrottled, fmt.Sprintf(
			"RetryQueue %q does not exist in namespace %q: nothing is sent until it is created (spec.queue is immutable)",
			*next.Spec.Queue, next.Namespace), now)
		next.Status.Reason = ReasonQueueNotFound
		return r.write(ctx, task, next, untilDeadline)
	}
	r.Queues.remember(next)
	sent, why := q.Offer(queueItem(next.DeepCopy()), r.Queues.dispatch)
	if sent {
		return ctrl.Result{}, nil
	}
	if next.Status.Phase != v1alpha1.PhaseWaiting || next.Status.Reason != ReasonQueueThrottled {
		// Written once on entering the queue: the reason can change often
		// while held, and each change would be a status write.
		setPhase(next, v1alpha1.PhaseWaiting, ReasonQueueThrottled, fmt.Sprintf(
			"due since %s, held by RetryQueue %q: %s", queueItem(next).ReadyAt.UTC().Format(time.RFC3339Nano), *next.Spec.Queue, why), now)
		if err := r.commit(ctx, task, next, nil); err != nil {
			return ctrl.Result{}, err
		}
		// The queue holds the item it was offered; give it the fresh
		// resourceVersion so that its claim does not conflict.
		q.Offer(queueItem(next.DeepCopy()), r.Queues.dispatch)
	}
	// The pump sends it; come back at the deadline to stop it if it is still held.
	return ctrl.Result{RequeueAfter: untilDeadline}, nil
}

// settleQueue releases a queue slot adopted at start-up for an attempt whose
// result is now recorded, and takes a task that is finished or held for a
// human out of its queue.
func (r *RetryTaskReconciler) settleQueue(task *v1alpha1.RetryTask) {
	if task.Spec.Queue == nil || task.Status.ActiveAttempt != nil || r.Queues == nil {
		return
	}
	q := r.Queues.Get(types.NamespacedName{Namespace: task.Namespace, Name: *task.Spec.Queue})
	if q == nil {
		return
	}
	q.Settle(string(task.UID))
	switch task.Status.Phase {
	case v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed, v1alpha1.PhaseEscalated, v1alpha1.PhaseOutcomeUnknown:
		q.Withdraw(string(task.UID))
	}
}
