package controller

import (
	"context"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/queue"
)

// queueStatusPeriod is how often a busy queue's status is refreshed.
const queueStatusPeriod = 2 * time.Second

// RetryQueueReconciler keeps a queue's limits in the manager's state and its
// status current.
type RetryQueueReconciler struct {
	client.Client
	Clock  clock.Clock
	Queues *Queues
}

// Reconcile syncs the limits and writes the live counts.
func (r *RetryQueueReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rq := &v1alpha1.RetryQueue{}
	if err := r.Get(ctx, req.NamespacedName, rq); err != nil {
		if apierrors.IsNotFound(err) {
			r.Queues.Remove(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	q, err := r.Queues.Sync(ctx, rq)
	if err != nil {
		return ctrl.Result{}, err
	}
	snap := q.Snapshot()
	next := rq.DeepCopy()
	queueStatus(next, snap, r.Clock.Now())
	if !equality.Semantic.DeepEqual(rq.Status, next.Status) {
		if err := r.Status().Update(ctx, next); err != nil && !apierrors.IsConflict(err) {
			return ctrl.Result{}, err
		}
	}
	if snap.InFlight > 0 || snap.Waiting > 0 || len(snap.Paused) > 0 {
		return ctrl.Result{RequeueAfter: queueStatusPeriod}, nil
	}
	return ctrl.Result{}, nil
}

// queueStatus builds the status from a snapshot of the live state.
func queueStatus(rq *v1alpha1.RetryQueue, snap queue.Snapshot, now time.Time) {
	s := &rq.Status
	s.InFlight, s.Waiting, s.Paused = int32(snap.InFlight), int32(snap.Waiting), int32(len(snap.Paused))
	s.PausedHosts = nil
	for host, until := range snap.Paused {
		s.PausedHosts = append(s.PausedHosts, v1alpha1.PausedHost{Host: host, Until: metav1.NewMicroTime(until)})
	}
	slices.SortFunc(s.PausedHosts, func(a, b v1alpha1.PausedHost) int { return strings.Compare(a.Host, b.Host) })
	s.ObservedGeneration = rq.Generation
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "LimitsApplied",
		Message: "the queue's limits apply to every task that names it", ObservedGeneration: rq.Generation,
		LastTransitionTime: metav1.NewTime(now),
	})
}

// SetupWithManager registers the queue controller.
func (r *RetryQueueReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.RetryQueue{}).Named("retryqueue").Complete(r)
}
