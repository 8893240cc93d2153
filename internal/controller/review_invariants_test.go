package controller_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/controller"
)

// A queue slot adopted at start-up (a task with an activeAttempt) is released
// only by a later reconcile of that task that sees no activeAttempt. If the task
// is deleted first, the Reconcile returns on NotFound and the slot is never
// released: with maxInFlight 1 the queue sends nothing, ever (I8, I6).
func TestReviewAdoptedSlotLeaksWhenTaskDeleted(t *testing.T) {
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == path("s0") {
			<-r.Context().Done()
		}
	})
	create(t, retryQueue(ns, "one", v1alpha1.RetryQueueSpec{MaxInFlight: 1}))
	first := startManager(t, ns, managerOpts{leaseGrace: 60 * time.Second})
	create(t, task(ns, "s0", srv.URL+path("s0"), inQueue("one"), func(rt *v1alpha1.RetryTask) {
		rt.Spec.Request.TimeoutSeconds = ptr.To[int32](30)
		rt.Spec.ActiveDeadlineSeconds = ptr.To[int64](600)
	}))
	waitFor(t, ns, "s0", 10*time.Second, "Dispatching", inPhase(v1alpha1.PhaseDispatching))
	first.stop()

	startManager(t, ns, managerOpts{leaseGrace: 60 * time.Second})
	// Make sure the new manager has built the queue's state (and adopted s0):
	// change the queue and wait for its status to observe the change.
	q := &v1alpha1.RetryQueue{}
	if err := env.Client.Get(context.Background(), keyOf(ns, "one"), q); err != nil {
		t.Fatal(err)
	}
	q.Spec.MaxDispatchesPerSecond = ptr.To[int32](100)
	if err := env.Client.Update(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	waitForQueue(t, ns, "one", q, func(q *v1alpha1.RetryQueue) bool {
		return q.Status.ObservedGeneration == q.Generation && q.Status.InFlight == 1
	})
	// The user deletes the task whose attempt was in flight.
	if err := env.Client.Delete(context.Background(), get(t, ns, "s0")); err != nil {
		t.Fatal(err)
	}
	create(t, task(ns, "next", srv.URL+path("next"), inQueue("one")))
	// s0 is gone: its adopted slot must not hold the queue.
	waitFor(t, ns, "next", 15*time.Second, "Succeeded", inPhase(v1alpha1.PhaseSucceeded))
}

// The queue-wide pause on a server's Retry-After lives only in memory: after a
// restart, other tasks of the queue go to the paused host at once, before the
// server's instant (issue 5: pauseOnThrottle; state rebuilt from task statuses).
func TestReviewQueuePauseLostOnRestart(t *testing.T) {
	ns := namespace(t)
	var throttledAt atomic.Value
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == path("first") && n == 1 {
			throttledAt.Store(time.Now())
			w.Header().Set("Retry-After", "8")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	})
	create(t, retryQueue(ns, "shared", v1alpha1.RetryQueueSpec{MaxInFlight: 10}))
	first := startManager(t, ns, managerOpts{})
	create(t, task(ns, "first", srv.URL+path("first"), inQueue("shared")))
	waitFor(t, ns, "first", 20*time.Second, "Waiting", inPhase(v1alpha1.PhaseWaiting))
	first.stop()

	startManager(t, ns, managerOpts{})
	create(t, task(ns, "other", srv.URL+path("other"), inQueue("shared")))
	waitFor(t, ns, "other", 20*time.Second, "Succeeded", inPhase(v1alpha1.PhaseSucceeded))
	at := srv.seen(path("other"))[0].at
	if early := at.Sub(throttledAt.Load().(time.Time)); early < 8*time.Second {
		t.Fatalf("after a restart, 'other' reached the host %v after a 429 with Retry-After: 8 that paused it for the queue", early)
	}
}

// A claim write that fails with a transient API error (not a conflict) makes
// the runner poke the controller, whose Reconcile returns success and
// dispatches again at once: no backoff, a hot loop of claims and error logs for
// every due task while the API server is unavailable.
func TestReviewClaimErrorsSpinWithoutBackoff(t *testing.T) {
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {})
	var failing atomic.Bool
	var tries atomic.Int64
	failing.Store(true)
	startManager(t, ns, managerOpts{fail: func(rt *v1alpha1.RetryTask) error {
		if failing.Load() {
			tries.Add(1)
			return unavailable()
		}
		return nil
	}})
	create(t, task(ns, "spin", srv.URL+path("spin")))
	time.Sleep(2 * time.Second)
	failing.Store(false)
	n := tries.Load()
	waitFor(t, ns, "spin", 20*time.Second, "Succeeded", inPhase(v1alpha1.PhaseSucceeded))
	// controller-runtime's rate limiter would allow ~10 tries in 2 s.
	if n > 40 {
		t.Fatalf("%d status writes tried in 2 s for one task while the API server was unavailable", n)
	}
}

// One transient API error on the write that records a 200 turns the attempt
// into OutcomeUnknown when the lease expires: the result is dropped instead of
// being written again (I8; under Manual it pages a human, under
// ResendWithIdempotencyKey it sends again a call that succeeded).
func TestReviewTransientErrorOnRecordLosesTheResult(t *testing.T) {
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {})
	var failed atomic.Bool
	startManager(t, ns, managerOpts{fail: func(rt *v1alpha1.RetryTask) error {
		if rt.Status.Phase == v1alpha1.PhaseSucceeded && failed.CompareAndSwap(false, true) {
			return unavailable()
		}
		return nil
	}})
	create(t, task(ns, "blip", srv.URL+path("blip"), func(rt *v1alpha1.RetryTask) {
		rt.Spec.Request.TimeoutSeconds = ptr.To[int32](1)
	}))
	rt := waitFor(t, ns, "blip", 20*time.Second, "a settled phase", func(rt *v1alpha1.RetryTask) bool {
		return rt.Status.Phase == v1alpha1.PhaseSucceeded || rt.Status.Phase == v1alpha1.PhaseOutcomeUnknown
	})
	if rt.Status.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("the server answered 200 once (%d requests) and one status write failed: %s",
			len(srv.seen(path("blip"))), describe(rt))
	}
}

// Every RetryQueue status write (its own reconcile writes one on each change of
// inFlight/waiting, and requeues every 2 s) is watched by the RetryTask
// controller without a predicate and fans out to every task naming the queue.
// While a queue drains, its status is rewritten on every change, and each write
// reconciles all its tasks.
func TestReviewQueueStatusWritesFanOutToEveryTask(t *testing.T) {
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {})
	create(t, retryQueue(ns, "drain", v1alpha1.RetryQueueSpec{MaxInFlight: 100,
		MaxDispatchesPerSecond: ptr.To[int32](10), Burst: ptr.To[int32](1)}))
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(context.Background(), &v1alpha1.RetryQueueList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var queueWrites atomic.Int64
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Modified {
				queueWrites.Add(1)
			}
		}
	}()
	before := reconciles(t, "retrytask")
	startManager(t, ns, managerOpts{})
	const n = 30
	names := createTasks(t, ns, "d", n, srv.URL, inQueue("drain"))
	start := time.Now()
	waitAll(t, ns, names, 60*time.Second, v1alpha1.PhaseSucceeded)
	took := time.Since(start)
	per := (reconciles(t, "retrytask") - before) / n
	t.Logf("drain took %v; RetryQueue status writes: %d; RetryTask reconciles per task: %.1f", took, queueWrites.Load(), per)
	if per > 6 { // 4.0 per task for the same load without a queue
		t.Fatalf("%.1f reconciles per task for one attempt each (queue status writes: %d in %v)", per, queueWrites.Load(), took)
	}
}

func reconciles(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == name {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// Runner.Dispatch returns false when the runner is not started (the runner and
// the controllers are started concurrently by the manager, in no set order) or
// is busy; Reconcile ignores the result and returns no requeue, so the due task
// is never looked at again (I8): it stays with an empty status, no timer.
func TestReviewRefusedDispatchIsNotRequeued(t *testing.T) {
	ns := namespace(t)
	create(t, task(ns, "dropped", "http://127.0.0.1:1/x"))
	runner := controller.NewRunner(env.Client, env.Client, env.Scheme, clock.RealClock{}, &controller.Events{}, 1)
	r := &controller.RetryTaskReconciler{Client: env.Client, Clock: clock.RealClock{}, Runner: runner, Events: &controller.Events{}}
	var res ctrl.Result
	var err error
	for range 20 { // the cached-less client sees the task at once
		res, err = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: keyOf(ns, "dropped")})
		if err == nil {
			break
		}
	}
	rt := get(t, ns, "dropped")
	if err == nil && res.RequeueAfter == 0 && rt.Status.Phase == "" {
		t.Fatalf("a due task whose dispatch was refused got no status and no requeue: result %+v", res)
	}
}

// Tasks held by a queue that are then deleted (or abandoned, or marked) stay in
// the queue's waiting list: Queue.Withdraw is never called. The pump still
// releases them in readyAt order, each taking a token of the rate limit (and
// a maxInFlight slot) for a claim that can only fail, so a task created after
// them waits behind phantoms (I6).
func TestReviewDeletedTasksKeepTheirQueuePlace(t *testing.T) {
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {})
	create(t, retryQueue(ns, "slow", v1alpha1.RetryQueueSpec{MaxInFlight: 100,
		MaxDispatchesPerSecond: ptr.To[int32](1), Burst: ptr.To[int32](1)}))
	startManager(t, ns, managerOpts{})
	names := createTasks(t, ns, "gone", 6, srv.URL, inQueue("slow"))
	held := 0
	for _, name := range names {
		rt := waitFor(t, ns, name, 10*time.Second, "held or sent", func(rt *v1alpha1.RetryTask) bool {
			return rt.Status.Reason == "QueueThrottled" || rt.Status.Phase == v1alpha1.PhaseSucceeded
		})
		if rt.Status.Phase != v1alpha1.PhaseSucceeded {
			held++
		}
		if err := env.Client.Delete(context.Background(), rt); err != nil {
			t.Fatal(err)
		}
	}
	created := time.Now()
	create(t, task(ns, "fresh", srv.URL+path("fresh"), inQueue("slow")))
	waitFor(t, ns, "fresh", 30*time.Second, "Succeeded", inPhase(v1alpha1.PhaseSucceeded))
	if took := srv.seen(path("fresh"))[0].at.Sub(created); took > 2500*time.Millisecond {
		t.Fatalf("a new task in an otherwise idle queue (1/s) was sent %v after creation, behind %d deleted tasks", took, held)
	}
}
