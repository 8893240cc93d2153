// Package controller holds the reconcilers: read the object, ask the planner,
// persist, then requeue or hand a due attempt to the runner.
package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/metrics"
	"github.com/retry-operator/retry-operator/internal/planner"
)

// +kubebuilder:rbac:groups=retryoperator.dev,resources=retrytasks,verbs=get;list;watch
// +kubebuilder:rbac:groups=retryoperator.dev,resources=retrytasks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=retryoperator.dev,resources=retrytasks/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets;configmaps,verbs=get;create;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// RetryTaskReconciler runs RetryTasks.
type RetryTaskReconciler struct {
	client.Client
	Clock  clock.Clock
	Runner *Runner
	Queues *Queues
	Events *Events
}

// Reconcile reads the task, settles leases and resolutions, and then either
// waits, stops, or hands a due attempt to the runner.
func (r *RetryTaskReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	task := &v1alpha1.RetryTask{}
	if err := r.Get(ctx, req.NamespacedName, task); err != nil {
		if apierrors.IsNotFound(err) {
			r.Queues.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !task.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if r.Runner.Running(task.UID) {
		// An attempt is being handled here; it writes its own result. Look
		// again after its longest possible run, in case its wake-up is lost.
		return ctrl.Result{RequeueAfter: timeoutOf(task) + r.Runner.LeaseGrace}, nil
	}
	r.settleQueue(task)
	now := r.Clock.Now()
	next := task.DeepCopy()
	initStatus(next, now)
	resolution := applyResolution(next, now)

	if a := next.Status.ActiveAttempt; a != nil {
		if now.Before(a.LeaseExpiresAt.Time) {
			// Another process may be sending it: wait for its result or its lease.
			return r.write(ctx, task, next, a.LeaseExpiresAt.Sub(now))
		}
		if why := expireLease(next, now); a.Mode == ModeSend {
			reconcileUnknown(next, ReasonLeaseExpired, why, r.Runner.jitter(), now)
		}
	}

	switch next.Status.Phase {
	case v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed, v1alpha1.PhaseEscalated:
		r.Runner.Forget(task.UID)
		return r.writeAndReport(ctx, task, next, resolution)
	case v1alpha1.PhaseOutcomeUnknown:
		if wantsStatusCheck(next) {
			if !equality.Semantic.DeepEqual(task.Status, next.Status) {
				// Write the unknown outcome first; the write's event brings us
				// back to probe from it.
				return r.writeAndReport(ctx, task, next, resolution)
			}
			if !r.Runner.Dispatch(next, ModeStatusCheck, nil) {
				return ctrl.Result{RequeueAfter: time.Second}, nil
			}
			return ctrl.Result{}, nil
		}
		return r.writeAndReport(ctx, task, next, resolution)
	}
	return r.advance(ctx, task, next, now, resolution)
}

// advance handles a task that may send: Pending or Waiting.
func (r *RetryTaskReconciler) advance(ctx context.Context, task, next *v1alpha1.RetryTask, now time.Time, resolution *v1alpha1.Resolution) (ctrl.Result, error) {
	st := plannerState(&next.Status)
	if !st.ReadyAt.IsZero() && !st.ReadyAt.Before(st.Deadline) {
		// A stored wait (a server's, kept across a resolution) that ends at or
		// after the deadline can never be honoured: stop now, not at the deadline.
		stopOrEscalate(next, planner.DeadlineExhausted, fmt.Sprintf("the next allowed send, %s, is at or after the deadline %s",
			st.ReadyAt.UTC().Format(time.RFC3339Nano), st.Deadline.UTC().Format(time.RFC3339Nano)), now)
		r.Runner.Forget(task.UID)
		return r.writeAndReport(ctx, task, next, resolution)
	}
	at := r.Runner.sendTime(next, now)
	lead := r.Runner.lead()
	if next.Spec.Queue != nil {
		lead = 0 // the queue admits at readyAt; it is offered then
	}
	if early := at.Sub(now); early > lead {
		return r.writeAndReportAfter(ctx, task, next, resolution, early-lead)
	}
	// Claim evaluates the deadline and readyAt at the send instant.
	_, res := planner.Claim(st, plannerPolicy(next).MaxAttempts, at)
	switch res {
	case planner.DeadlinePassed, planner.BudgetSpent:
		reason, msg := claimStop(res, next, now)
		stopOrEscalate(next, reason, msg, now)
		r.Runner.Forget(task.UID)
		return r.writeAndReport(ctx, task, next, resolution)
	case planner.Claimed:
		if resolution != nil {
			if err := r.commit(ctx, task, next, resolution); err != nil {
				return ctrl.Result{}, err
			}
		}
		if next.Spec.Queue != nil {
			return r.offer(ctx, task, next, now)
		}
		// The runner claims in the API server before sending (I4); the claim
		// also carries the status initialised above.
		if !r.Runner.Dispatch(next, ModeSend, nil) {
			return ctrl.Result{RequeueAfter: time.Second}, nil // the runner is not started yet
		}
		return ctrl.Result{}, nil
	}
	// Not due or busy at the send instant: look again shortly.
	return r.writeAndReportAfter(ctx, task, next, resolution, time.Second)
}

func (r *RetryTaskReconciler) writeAndReport(ctx context.Context, task, next *v1alpha1.RetryTask, resolution *v1alpha1.Resolution) (ctrl.Result, error) {
	return r.writeAndReportAfter(ctx, task, next, resolution, 0)
}

func (r *RetryTaskReconciler) writeAndReportAfter(ctx context.Context, task, next *v1alpha1.RetryTask, resolution *v1alpha1.Resolution, after time.Duration) (ctrl.Result, error) {
	if err := r.commit(ctx, task, next, resolution); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

func (r *RetryTaskReconciler) write(ctx context.Context, task, next *v1alpha1.RetryTask, after time.Duration) (ctrl.Result, error) {
	return r.writeAndReportAfter(ctx, task, next, nil, after)
}

// commit writes the status when it changed, with the resourceVersion read, and
// reports the change. A conflict is not an error: the write that won will
// bring a fresh event.
func (r *RetryTaskReconciler) commit(ctx context.Context, task, next *v1alpha1.RetryTask, resolution *v1alpha1.Resolution) error {
	if equality.Semantic.DeepEqual(task.Status, next.Status) {
		return nil
	}
	if err := r.Status().Update(ctx, next); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if resolution != nil {
		r.Events.resolved(next, resolution.Action, resolution.Note)
	}
	if task.Status.Phase != next.Status.Phase {
		r.Events.decision(next)
		metrics.Decisions.WithLabelValues(string(next.Status.Phase), next.Status.Reason).Inc()
	}
	task.Status = next.Status
	task.ResourceVersion = next.ResourceVersion
	return nil
}

func (r *RetryTaskReconciler) tasksOfQueue(ctx context.Context, o client.Object) []reconcile.Request {
	var tasks v1alpha1.RetryTaskList
	if err := r.List(ctx, &tasks, client.InNamespace(o.GetNamespace()), client.MatchingFields{queueIndex: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(tasks.Items))
	for _, t := range tasks.Items {
		if !isFinal(t.Status.Phase) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&t)})
		}
	}
	return reqs
}

func isFinal(p v1alpha1.Phase) bool { return p == v1alpha1.PhaseSucceeded || p == v1alpha1.PhaseFailed }

func wantsStatusCheck(t *v1alpha1.RetryTask) bool {
	u := t.Spec.OnUnknownOutcome
	return u != nil && u.Policy == "StatusCheck" && u.StatusCheck != nil &&
		t.Status.ActiveAttempt == nil && t.Status.Reason != ReasonInconclusive
}

// SetupWithManager registers the controller; the runner's wake-ups are a second
// source, so a finished attempt is looked at again at once.
func (r *RetryTaskReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.RetryTask{}).
		WatchesRawSource(source.Channel(r.Runner.wake, &handler.EnqueueRequestForObject{})).
		// A queue that appears, changes or goes away concerns the tasks naming it.
		Watches(&v1alpha1.RetryQueue{}, handler.EnqueueRequestsFromMapFunc(r.tasksOfQueue),
			// Only creation, deletion and spec changes: the queue's frequent
			// status writes must not fan out to every task.
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Named("retrytask").
		Complete(r)
}
