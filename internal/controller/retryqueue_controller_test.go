package controller_test

import (
	"net/http"
	"sort"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
)

func retryQueue(ns, name string, spec v1alpha1.RetryQueueSpec) *v1alpha1.RetryQueue {
	return &v1alpha1.RetryQueue{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

func inQueue(q string) func(*v1alpha1.RetryTask) {
	return func(rt *v1alpha1.RetryTask) { rt.Spec.Queue = ptr.To(q) }
}

func createTasks(t *testing.T, ns, prefix string, n int, url string, mutate ...func(*v1alpha1.RetryTask)) []string {
	t.Helper()
	names := make([]string, n)
	for i := range n {
		names[i] = prefix + strconv.Itoa(i)
		create(t, task(ns, names[i], url+path(names[i]), mutate...))
	}
	return names
}

func waitAll(t *testing.T, ns string, names []string, timeout time.Duration, phase v1alpha1.Phase) {
	t.Helper()
	for _, name := range names {
		waitFor(t, ns, name, timeout, string(phase), inPhase(phase))
	}
}

func TestQueueMaxInFlight(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {
		time.Sleep(100 * time.Millisecond)
	})
	create(t, retryQueue(ns, "narrow", v1alpha1.RetryQueueSpec{MaxInFlight: 3}))
	startManager(t, ns, managerOpts{})
	names := createTasks(t, ns, "q", 50, srv.URL, inQueue("narrow"))
	waitAll(t, ns, names, 60*time.Second, v1alpha1.PhaseSucceeded)
	if peak := srv.peak.Load(); peak > 3 || peak < 2 {
		t.Fatalf("server saw %d requests at once; the queue allows 3", peak)
	}
}

func TestQueueRate(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {})
	create(t, retryQueue(ns, "slow", v1alpha1.RetryQueueSpec{MaxInFlight: 100, MaxDispatchesPerSecond: ptr.To[int32](10), Burst: ptr.To[int32](5)}))
	startManager(t, ns, managerOpts{})
	names := createTasks(t, ns, "r", 40, srv.URL, inQueue("slow"))
	waitAll(t, ns, names, 60*time.Second, v1alpha1.PhaseSucceeded)
	srv.mu.Lock()
	var at []time.Time
	for _, a := range srv.arrivals {
		at = append(at, a.at)
	}
	srv.mu.Unlock()
	if peak := peakPerSecond(at); peak > 10+5 {
		t.Fatalf("%d arrivals within one second; the queue allows rate 10 + burst 5", peak)
	}
	if took := at[len(at)-1].Sub(at[0]); took < 3*time.Second {
		t.Fatalf("40 requests at 10/s took %v", took)
	}
}

// peakPerSecond is the most arrivals in any 1-second window.
func peakPerSecond(at []time.Time) int {
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	peak, lo := 0, 0
	for hi := range at {
		for at[hi].Sub(at[lo]) >= time.Second {
			lo++
		}
		peak = max(peak, hi-lo+1)
	}
	return peak
}

// One 429 with Retry-After pauses the host for every task in the queue, and
// nothing reaches the host before the server's instant.
func TestQueuePauseOnThrottle(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	var throttledAt time.Time
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == path("first") && n == 1 {
			throttledAt = time.Now()
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	})
	create(t, retryQueue(ns, "shared", v1alpha1.RetryQueueSpec{MaxInFlight: 10}))
	startManager(t, ns, managerOpts{})
	create(t, task(ns, "first", srv.URL+path("first"), inQueue("shared")))
	waitFor(t, ns, "first", 20*time.Second, "Waiting", inPhase(v1alpha1.PhaseWaiting))
	others := createTasks(t, ns, "other", 5, srv.URL, inQueue("shared"))
	waitFor(t, ns, others[0], 10*time.Second, "QueueThrottled", func(rt *v1alpha1.RetryTask) bool {
		return condition(rt, v1alpha1.ConditionWaiting).Reason == "QueueThrottled"
	})
	q := &v1alpha1.RetryQueue{}
	waitForQueue(t, ns, "shared", q, func(q *v1alpha1.RetryQueue) bool { return len(q.Status.PausedHosts) == 1 })
	if q.Status.PausedHosts[0].Host != "127.0.0.1" {
		t.Fatalf("paused hosts = %+v", q.Status.PausedHosts)
	}
	waitAll(t, ns, append(others, "first"), 30*time.Second, v1alpha1.PhaseSucceeded)
	for _, name := range others {
		a := srv.seen(path(name))
		if len(a) != 1 || a[0].at.Sub(throttledAt) < 3*time.Second {
			t.Fatalf("%s reached the paused host %v after the 429 (want >= 3s)", name, a[0].at.Sub(throttledAt))
		}
	}
}

// Over the retry budget, a retry waits while first attempts compete for the
// queue, even though its readyAt is earlier; the first attempts still go.
func TestQueueRetryBudget(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == path("retrier") && n == 1:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		case r.URL.Path == path("blocker"):
			time.Sleep(4 * time.Second) // holds the queue's only slot
		}
	})
	create(t, retryQueue(ns, "budget", v1alpha1.RetryQueueSpec{MaxInFlight: 1, RetryBudgetPercent: ptr.To[int32](0),
		PauseOnThrottle: ptr.To(false)}))
	startManager(t, ns, managerOpts{})
	create(t, task(ns, "retrier", srv.URL+path("retrier"), inQueue("budget")))
	w := waitFor(t, ns, "retrier", 20*time.Second, "Waiting", inPhase(v1alpha1.PhaseWaiting))
	create(t, task(ns, "blocker", srv.URL+path("blocker"), inQueue("budget")))
	waitFor(t, ns, "blocker", 20*time.Second, "Dispatching", inPhase(v1alpha1.PhaseDispatching))
	// First attempts order by creation (whole seconds): create them late
	// enough that the retry's readyAt is earlier, so only the budget can put
	// them first.
	time.Sleep(time.Until(w.Status.ReadyAt.Add(1100 * time.Millisecond)))
	fresh := createTasks(t, ns, "fresh", 3, srv.URL, inQueue("budget"))
	waitAll(t, ns, append(fresh, "retrier"), 30*time.Second, v1alpha1.PhaseSucceeded)
	retry := srv.seen(path("retrier"))[1].at
	for _, name := range fresh {
		if a := srv.seen(path(name)); a[0].at.After(retry) {
			t.Fatalf("the retry went at %v, before first attempt %s at %v, with a 0%% retry budget", retry, name, a[0].at)
		}
	}
}

func TestQueueMissing(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {})
	startManager(t, ns, managerOpts{})
	create(t, task(ns, "orphan", srv.URL+path("orphan"), inQueue("nowhere")))
	rt := waitFor(t, ns, "orphan", 20*time.Second, "QueueNotFound", func(rt *v1alpha1.RetryTask) bool {
		return rt.Status.Reason == "QueueNotFound"
	})
	if c := condition(rt, v1alpha1.ConditionWaiting); c.Status != metav1.ConditionTrue || c.Reason != "QueueThrottled" {
		t.Fatalf("Waiting condition = %+v", c)
	}
	if len(srv.seen(path("orphan"))) != 0 {
		t.Fatal("a task whose queue is missing was sent")
	}
	// Creating the queue releases it.
	create(t, retryQueue(ns, "nowhere", v1alpha1.RetryQueueSpec{MaxInFlight: 1}))
	waitFor(t, ns, "orphan", 20*time.Second, "Succeeded", inPhase(v1alpha1.PhaseSucceeded))
}

func TestQueueDeadlinePassesWhileQueued(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == path("blocker") {
			<-r.Context().Done()
		}
	})
	create(t, retryQueue(ns, "one", v1alpha1.RetryQueueSpec{MaxInFlight: 1}))
	startManager(t, ns, managerOpts{leaseGrace: 30 * time.Second})
	create(t, task(ns, "blocker", srv.URL+path("blocker"), inQueue("one"), func(rt *v1alpha1.RetryTask) {
		rt.Spec.Request.TimeoutSeconds = ptr.To[int32](10)
	}))
	waitFor(t, ns, "blocker", 10*time.Second, "Dispatching", inPhase(v1alpha1.PhaseDispatching))
	create(t, task(ns, "starved", srv.URL+path("starved"), inQueue("one"), func(rt *v1alpha1.RetryTask) {
		rt.Spec.ActiveDeadlineSeconds = ptr.To[int64](3)
	}))
	rt := waitFor(t, ns, "starved", 20*time.Second, "Failed", inPhase(v1alpha1.PhaseFailed))
	if rt.Status.Reason != "DeadlineExhausted" || rt.Status.Attempts != 0 || len(srv.seen(path("starved"))) != 0 {
		t.Fatalf("%s; sent %d", describe(rt), len(srv.seen(path("starved"))))
	}
}

// A restart with attempts in flight rebuilds the queue's count from task
// statuses, so the new manager does not exceed maxInFlight.
func TestQueueRestartKeepsInFlight(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 && r.URL.Path < path("s2") {
			<-r.Context().Done() // the first two hang: in flight across the restart
		}
	})
	create(t, retryQueue(ns, "two", v1alpha1.RetryQueueSpec{MaxInFlight: 2}))
	first := startManager(t, ns, managerOpts{leaseGrace: 2 * time.Second})
	mutate := []func(*v1alpha1.RetryTask){inQueue("two"), func(rt *v1alpha1.RetryTask) {
		rt.Spec.Request.TimeoutSeconds = ptr.To[int32](2)
	}}
	create(t, task(ns, "s0", srv.URL+path("s0"), mutate...))
	create(t, task(ns, "s1", srv.URL+path("s1"), mutate...))
	waitFor(t, ns, "s0", 10*time.Second, "Dispatching", inPhase(v1alpha1.PhaseDispatching))
	waitFor(t, ns, "s1", 10*time.Second, "Dispatching", inPhase(v1alpha1.PhaseDispatching))
	first.stop()
	later := createTasks(t, ns, "t", 3, srv.URL, mutate...)
	restarted := time.Now()
	startManager(t, ns, managerOpts{leaseGrace: 2 * time.Second})
	waitAll(t, ns, later, 30*time.Second, v1alpha1.PhaseSucceeded)
	for _, name := range later {
		// The slots free only when the adopted attempts' leases expire
		// (timeout 2s + grace 2s after their claim).
		if a := srv.seen(path(name)); a[0].at.Sub(restarted) < time.Second {
			t.Fatalf("%s was sent %v after the restart, while 2 adopted attempts filled the queue", name, a[0].at.Sub(restarted))
		}
	}
}

// A backlog in one queue never delays a task in another (I6).
func TestQueuesAreIndependent(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path("interactive") {
			time.Sleep(time.Second)
		}
	})
	create(t, retryQueue(ns, "batch", v1alpha1.RetryQueueSpec{MaxInFlight: 1, MaxDispatchesPerSecond: ptr.To[int32](1)}))
	create(t, retryQueue(ns, "interactive", v1alpha1.RetryQueueSpec{MaxInFlight: 1}))
	startManager(t, ns, managerOpts{})
	createTasks(t, ns, "b", 10, srv.URL, inQueue("batch"))
	start := time.Now()
	create(t, task(ns, "interactive", srv.URL+path("interactive"), inQueue("interactive")))
	waitFor(t, ns, "interactive", 20*time.Second, "Succeeded", inPhase(v1alpha1.PhaseSucceeded))
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the interactive task took %v behind the batch backlog", took)
	}
}

func waitForQueue(t *testing.T, ns, name string, q *v1alpha1.RetryQueue, cond func(*v1alpha1.RetryQueue) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := env.Client.Get(t.Context(), keyOf(ns, name), q); err != nil {
			t.Fatal(err)
		}
		if cond(q) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s: status %+v", name, q.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
