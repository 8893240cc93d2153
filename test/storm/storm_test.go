// Package storm measures a retry storm and what a RetryQueue does to it: 1,000
// tasks against a loopback API that answers 429 `Retry-After: 5` to every
// request for its first 3 seconds, then 200. The same load runs twice in one
// process, against one real kube-apiserver + etcd: once in a RetryQueue
// (50/s, burst 50, pauseOnThrottle) and once without a queue, as the
// baseline. Every figure comes from the server's own log of arrivals, except
// the drain time, which ends when the benchmark's watch sees the last task
// Succeeded. It prints figures; it fails only on what must never happen (a
// request earlier than the instant the server announced, a task that does not
// succeed).
//
//	make bench-storm
package storm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/controller"
	"github.com/retry-operator/retry-operator/internal/testenv"
)

const (
	numTasks = 1000

	// The queue: issue 5's rate, a burst equal to it (the API's default),
	// and a maxInFlight that never binds, so that only the token bucket and
	// the pause shape the traffic.
	queueRate        = 50
	queueBurst       = 50
	queueMaxInFlight = 1000

	// The server: 429 with `Retry-After: 5` to every request that arrives in
	// the first 3 s after its first request, then 200.
	throttleFor       = 3 * time.Second
	retryAfterSeconds = 5

	// The tasks: a deadline and an attempt budget that never bind;
	// maxWaitSeconds stays at its default (60 s >= 5 s).
	taskDeadlineSeconds = 300
	taskMaxAttempts     = 5

	// The manager: client-go's default limiter (5/10) would make the client,
	// not the operator, the thing measured; 16 reconcile workers instead of
	// 8; the dispatcher pool (attempts in flight across all tasks) stays at
	// the controller's default, 64: it is what bounds the baseline.
	managerQPS, managerBurst = 1000, 2000
	workers                  = 16

	// createConcurrency is the pool of goroutines that create the tasks "at
	// once", with no client-side limit.
	createConcurrency = 32
	drainTimeout      = 5 * time.Minute

	// Goals of issue 5.
	goalRatio = 1.10
)

// BenchmarkStorm runs the whole scenario once, whatever b.N is (run it with
// -benchtime 1x).
func BenchmarkStorm(b *testing.B) {
	errs := &testenv.ErrorLog{}
	ctrl.SetLogger(logr.New(errs))

	env, err := testenv.Start()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)

	// The benchmark's own client (namespaces, creates, watch, final list)
	// has no client-side limiter.
	fast, err := env.UnlimitedClient()
	if err != nil {
		b.Fatal(err)
	}
	load := testenv.LoadAverage()

	queued := runScenario(ctx, b, env, fast, true, errs)
	baseline := runScenario(ctx, b, env, fast, false, errs)

	printReport(load, queued, baseline)

	b.ReportMetric(float64(queued.peak), "queue-peak/s")
	b.ReportMetric(float64(queued.claimPeak), "queue-claim-peak/s")
	b.ReportMetric(float64(queued.early), "queue-early")
	b.ReportMetric(queued.drain.Seconds(), "queue-drain-s")
	b.ReportMetric(queued.ratio, "queue-drain/ideal")
	b.ReportMetric(queued.reqMean, "queue-req/task")
	b.ReportMetric(float64(baseline.peak), "base-peak/s")
	b.ReportMetric(float64(baseline.early), "base-early")
	b.ReportMetric(baseline.drain.Seconds(), "base-drain-s")
	b.ReportMetric(baseline.reqMean, "base-req/task")

	for _, r := range []*result{queued, baseline} {
		if r.early > 0 {
			b.Errorf("%s: I1 violated: %d requests arrived before the instant the server announced to that task", r.name, r.early)
		}
		if r.succeeded != numTasks {
			b.Errorf("%s: %d of %d tasks succeeded (others: %v)", r.name, r.succeeded, numTasks, r.notSucceeded)
		}
	}
}

// result is one run's figures.
type result struct {
	name   string
	queued bool

	t0       time.Time     // just before the first create
	created  time.Duration // to create all tasks
	log      []entry       // the server's log, in arrival order
	doneAt   map[string]time.Time
	lastDone time.Time // the watch saw the last task Succeeded

	succeeded    int
	notSucceeded map[v1alpha1.Phase]int
	statusWrites int64
	conflicts    int64
	writeP50     time.Duration
	writeP99     time.Duration
	errorLogs    int
	firstErrors  []string

	// From the server's log.
	requests, throttled      int
	peak                     int
	peakAt                   time.Duration // start of the peak window, from t0
	reqMin, reqMax           int
	reqMean                  float64
	hist                     map[int]int // requests per task -> tasks
	early                    int         // arrivals before the instant announced to that task
	earliest                 time.Duration
	intoPause                int // arrivals while some 429 announced a later instant
	firstArrival, lastArrive time.Duration
	pauseEnd                 time.Duration // latest instant announced by a 429, from t0
	afterPause               int           // arrivals at or after pauseEnd
	afterRate                float64       // their rate, first to last
	drain                    time.Duration // t0 to lastDone
	drainAfterPause          time.Duration // pauseEnd to lastDone
	ideal                    time.Duration // numTasks / rate
	ratio                    float64       // drainAfterPause / ideal
	perSecond                []int         // arrivals per whole second since t0
	perSecond429             []int

	// From the status history: the claim instants (history sentAt, written
	// before the send), their peak per second, and claim-to-arrival latency.
	claimPeak                      int
	claimPeakAt                    time.Duration
	lagP50, lagP99, lagMax, lagMin time.Duration
	// Arrivals in the peak window: their claim-to-arrival lag, and how many
	// were claimed before the window opened.
	peakLagP50, peakLagMax time.Duration
	peakClaimedBefore      int

	events  int      // Events in the namespace after the run
	slowest []string // the tasks that finished last, described
}

func runScenario(ctx context.Context, b *testing.B, env *testenv.Env, fast client.WithWatch, queued bool, errs *testenv.ErrorLog) *result {
	r := &result{name: "no queue (baseline)", queued: queued}
	if queued {
		r.name = fmt.Sprintf("RetryQueue %d/s burst %d", queueRate, queueBurst)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "storm-"}}
	if err := fast.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	srv := newServer()
	defer srv.Close()

	if queued {
		q := &v1alpha1.RetryQueue{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "storm"},
			Spec: v1alpha1.RetryQueueSpec{
				MaxInFlight:            queueMaxInFlight,
				MaxDispatchesPerSecond: ptr.To[int32](queueRate),
				Burst:                  ptr.To[int32](queueBurst),
				PauseOnThrottle:        ptr.To(true),
			},
		}
		if err := fast.Create(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	w, err := watchTasks(ctx, fast, ns.Name)
	if err != nil {
		b.Fatal(err)
	}
	defer w.stop()

	errs.Reset()
	mgr, err := startManager(ctx, env, ns.Name)
	if err != nil {
		b.Fatal(err)
	}
	if queued {
		// The queue's in-memory state (and its token bucket, which starts
		// empty) exists once the queue controller has synced it; give the
		// bucket a full second more to fill. The tasks then arrive at an
		// idle queue with a full bucket, as in production: the worst case
		// for the peak.
		if err := waitQueueReady(ctx, fast, ns.Name, "storm"); err != nil {
			b.Fatal(err)
		}
		time.Sleep(time.Second + 100*time.Millisecond)
	}

	tasks := make([]*v1alpha1.RetryTask, numTasks)
	for i := range tasks {
		name := fmt.Sprintf("t-%04d", i)
		tasks[i] = newTask(ns.Name, name, srv.URL+"/t/"+name, queued)
	}
	r.t0 = time.Now()
	if err := testenv.CreateAll(ctx, fast, tasks, createConcurrency); err != nil {
		b.Fatal(err)
	}
	r.created = time.Since(r.t0)
	waitErr := w.waitAll(numTasks, r.t0, drainTimeout)
	errCount, firstErrs := errs.Count() // before the stop's own "context canceled"
	mgr.stop()
	srv.Close()
	if waitErr != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", r.name, waitErr)
	}

	// The API server's word, not the watch's, for the phases.
	var list v1alpha1.RetryTaskList
	if err := fast.List(ctx, &list, client.InNamespace(ns.Name)); err != nil {
		b.Fatal(err)
	}
	r.notSucceeded = map[v1alpha1.Phase]int{}
	for _, t := range list.Items {
		if t.Status.Phase == v1alpha1.PhaseSucceeded {
			r.succeeded++
		} else {
			r.notSucceeded[t.Status.Phase]++
		}
	}
	r.doneAt, r.lastDone = w.succeeded()
	var events eventsv1.EventList
	if err := fast.List(ctx, &events, client.InNamespace(ns.Name)); err != nil {
		b.Fatal(err)
	}
	r.events = len(events.Items)
	r.slowest = slowest(r.t0, r.doneAt, list.Items, srv.entries(), events.Items, 3)
	r.log = srv.entries()
	r.statusWrites, r.conflicts = mgr.statusWrites.Load(), mgr.conflicts.Load()
	r.writeP50, r.writeP99 = mgr.latency(0.50), mgr.latency(0.99)
	r.errorLogs, r.firstErrors = errCount, firstErrs
	r.analyse(tasks)
	r.claims(list.Items)
	return r
}

func newTask(ns, name, url string, queued bool) *v1alpha1.RetryTask {
	t := &v1alpha1.RetryTask{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.RetryTaskSpec{
			Request:               v1alpha1.RequestSpec{URL: url},
			Retry:                 &v1alpha1.RetryPolicy{MaxAttempts: taskMaxAttempts},
			ActiveDeadlineSeconds: ptr.To[int64](taskDeadlineSeconds),
		},
	}
	if queued {
		t.Spec.Queue = ptr.To("storm")
	}
	return t
}

// analyse computes the figures from the server's log and the watch.
func (r *result) analyse(tasks []*v1alpha1.RetryTask) {
	log := r.log
	r.requests = len(log)
	at := make([]time.Time, len(log))
	perPath := map[string]int{}
	// announced holds, per path, the latest instant a 429 announced so far.
	announced := map[string]time.Time{}
	var pause time.Time // latest instant announced by any 429 replied so far
	// 429s in reply order, to know which pauses had been announced when a
	// request arrived.
	type ann struct{ replied, until time.Time }
	var anns []ann
	for i, e := range log {
		at[i] = e.at
		if e.status == http.StatusTooManyRequests {
			r.throttled++
			anns = append(anns, ann{e.replied, e.announced})
			if e.announced.After(pause) {
				pause = e.announced
			}
		}
	}
	sort.Slice(anns, func(i, j int) bool { return anns[i].replied.Before(anns[j].replied) })
	r.pauseEnd = since(r.t0, pause)

	// Early: an arrival on a path before the instant a previous 429 on that
	// path announced. Into pause: an arrival while any 429 replied earlier
	// had announced a later instant (what pauseOnThrottle is meant to stop).
	r.earliest = time.Duration(math.MaxInt64)
	var latest time.Time
	k := 0
	for _, e := range log {
		perPath[e.path]++
		if until, ok := announced[e.path]; ok && e.at.Before(until) {
			r.early++
			r.earliest = min(r.earliest, until.Sub(e.at))
		}
		if e.status == http.StatusTooManyRequests {
			if e.announced.After(announced[e.path]) {
				announced[e.path] = e.announced
			}
		}
		for ; k < len(anns) && anns[k].replied.Before(e.at); k++ {
			if anns[k].until.After(latest) {
				latest = anns[k].until
			}
		}
		if e.at.Before(latest) {
			r.intoPause++
		}
	}

	r.hist = map[int]int{}
	r.reqMin, r.reqMax = math.MaxInt, 0
	for _, t := range tasks {
		n := perPath["/t/"+t.Name]
		r.hist[n]++
		r.reqMin, r.reqMax = min(r.reqMin, n), max(r.reqMax, n)
	}
	r.reqMean = float64(len(log)) / float64(len(tasks))

	if len(at) > 0 {
		r.firstArrival, r.lastArrive = since(r.t0, at[0]), since(r.t0, at[len(at)-1])
		var peakStart time.Time
		r.peak, peakStart = peakPerSecond(at)
		r.peakAt = since(r.t0, peakStart)
		var after []time.Time
		for _, a := range at {
			if !pause.IsZero() && !a.Before(pause) {
				after = append(after, a)
			}
		}
		r.afterPause = len(after)
		if len(after) > 1 {
			r.afterRate = float64(len(after)-1) / after[len(after)-1].Sub(after[0]).Seconds()
		}
		secs := int(at[len(at)-1].Sub(r.t0)/time.Second) + 1
		r.perSecond, r.perSecond429 = make([]int, secs), make([]int, secs)
		for _, e := range log {
			s := int(e.at.Sub(r.t0) / time.Second)
			r.perSecond[s]++
			if e.status == http.StatusTooManyRequests {
				r.perSecond429[s]++
			}
		}
	}
	if !r.lastDone.IsZero() {
		r.drain = r.lastDone.Sub(r.t0)
	}
	if r.queued && !pause.IsZero() && !r.lastDone.IsZero() {
		r.ideal = time.Duration(numTasks) * time.Second / queueRate
		r.drainAfterPause = r.lastDone.Sub(pause)
		r.ratio = r.drainAfterPause.Seconds() / r.ideal.Seconds()
	}
}

// claims matches each task's attempts (status history, in order) with its
// arrivals at the server (in order): the claim instant is taken just before
// the claim write, after the queue admitted the attempt.
func (r *result) claims(tasks []v1alpha1.RetryTask) {
	arrivals := map[string][]time.Time{}
	for _, e := range r.log {
		arrivals[e.path] = append(arrivals[e.path], e.at)
	}
	var claimed []time.Time
	var lags, inPeak []time.Duration
	peakFrom := r.t0.Add(r.peakAt)
	for _, t := range tasks {
		at := arrivals["/t/"+t.Name]
		h := t.Status.History
		for i := range h {
			claimed = append(claimed, h[i].SentAt.Time)
		}
		if len(h) != len(at) {
			continue // an attempt that never reached the server
		}
		for i := range h {
			lag := at[i].Sub(h[i].SentAt.Time)
			lags = append(lags, lag)
			if !at[i].Before(peakFrom) && at[i].Before(peakFrom.Add(time.Second)) {
				inPeak = append(inPeak, lag)
				if h[i].SentAt.Time.Before(peakFrom) {
					r.peakClaimedBefore++
				}
			}
		}
	}
	sort.Slice(claimed, func(i, j int) bool { return claimed[i].Before(claimed[j]) })
	var start time.Time
	r.claimPeak, start = peakPerSecond(claimed)
	r.claimPeakAt = since(r.t0, start)
	if len(lags) > 0 {
		sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
		r.lagMin, r.lagP50, r.lagP99, r.lagMax = lags[0], lags[len(lags)/2], lags[min(len(lags)-1, len(lags)*99/100)], lags[len(lags)-1]
	}
	if len(inPeak) > 0 {
		sort.Slice(inPeak, func(i, j int) bool { return inPeak[i] < inPeak[j] })
		r.peakLagP50, r.peakLagMax = inPeak[len(inPeak)/2], inPeak[len(inPeak)-1]
	}
}

func since(t0, t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return t.Sub(t0)
}

// peakPerSecond is the most arrivals in any window [t, t+1s), and where that
// window starts (at an arrival).
func peakPerSecond(at []time.Time) (int, time.Time) {
	peak, lo, start := 0, 0, time.Time{}
	for hi := range at {
		for at[hi].Sub(at[lo]) >= time.Second {
			lo++
		}
		if n := hi - lo + 1; n > peak {
			peak, start = n, at[lo]
		}
	}
	return peak, start
}

func printReport(load string, q, base *result) {
	sec := func(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
	fmt.Printf("\nRetry storm: %d tasks; the server answers 429 `Retry-After: %d` to every request for %s after its first one, then 200.\n",
		numTasks, retryAfterSeconds, throttleFor)
	fmt.Printf("Manager: rest QPS %d / burst %d, Workers %d, Dispatchers 64 (default); queue: maxDispatchesPerSecond %d, burst %d, maxInFlight %d, pauseOnThrottle true.\n",
		managerQPS, managerBurst, workers, queueRate, queueBurst, queueMaxInFlight)
	fmt.Printf("Tasks: GET, activeDeadlineSeconds %d, maxAttempts %d, maxWaitSeconds 60 (default). Load average before: %s. Times are from t0 = the first create.\n\n",
		taskDeadlineSeconds, taskMaxAttempts, load)

	fmt.Printf("%-26s %9s %6s %8s %13s %6s %7s %9s %10s %11s %7s %7s\n",
		"run", "requests", "429s", "peak/1s", "req/task", "early", "inPause", "pauseEnd", "drain", "afterPause", "ideal", "ratio")
	for _, r := range []*result{q, base} {
		ideal, ratio, pauseEnd, after := "n/a", "n/a", "n/a", "n/a"
		if r.queued {
			ideal, ratio = sec(r.ideal), fmt.Sprintf("%.3f", r.ratio)
			after = sec(r.drainAfterPause)
		}
		if r.pauseEnd != 0 {
			pauseEnd = sec(r.pauseEnd)
		}
		fmt.Printf("%-26s %9d %6d %8d %13s %6d %7d %9s %10s %11s %7s %7s\n",
			r.name, r.requests, r.throttled, r.peak,
			fmt.Sprintf("%d/%.3f/%d", r.reqMin, r.reqMean, r.reqMax),
			r.early, r.intoPause, pauseEnd, sec(r.drain), after, ideal, ratio)
	}
	fmt.Println()
	fmt.Println("  peak/1s    most arrivals at the server in any window [t, t+1s)")
	fmt.Println("  req/task   requests per task at the server: min/mean/max")
	fmt.Println("  early      requests that arrived before the instant the server announced to that task")
	fmt.Println("             (a 429's response flushed at T announces T + 5s); must be 0")
	fmt.Println("  inPause    requests (any task) that arrived while an earlier 429 had announced a later instant")
	fmt.Println("  pauseEnd   the latest instant any 429 announced (end of the server's requested pause)")
	fmt.Println("  drain      t0 to the last task seen Succeeded (by the benchmark's watch)")
	fmt.Printf("  ideal      %d tasks / %d per s = %s after pauseEnd (the token bucket's floor is (%d-%d)/%d = %.0fs: the burst refills during the pause)\n",
		numTasks, queueRate, sec(time.Duration(numTasks)*time.Second/queueRate), numTasks, queueBurst, queueRate, float64(numTasks-queueBurst)/queueRate)
	fmt.Printf("  ratio      afterPause / ideal, where afterPause = pauseEnd to the last Succeeded; goal <= %.2f\n\n", goalRatio)

	fmt.Println("Requests per task (histogram):")
	for _, r := range []*result{q, base} {
		var parts []string
		for n := r.reqMin; n <= r.reqMax; n++ {
			parts = append(parts, fmt.Sprintf("%d req: %d", n, r.hist[n]))
		}
		fmt.Printf("  %-26s %s\n", r.name, strings.Join(parts, ", "))
	}
	fmt.Println()

	fmt.Println("Details:")
	for _, r := range []*result{q, base} {
		fmt.Printf("  %s:\n", r.name)
		fmt.Printf("    created all in %s; first arrival %s, last arrival %s; peak window starts at %s\n",
			sec(r.created), sec(r.firstArrival), sec(r.lastArrive), sec(r.peakAt))
		if r.queued {
			fmt.Printf("    %d arrivals at or after pauseEnd, at %.1f/s (first to last); last arrival to last Succeeded %s\n",
				r.afterPause, r.afterRate, sec(r.lastDone.Sub(r.t0)-r.lastArrive))
		}
		fmt.Printf("    claims (history sentAt, just before the claim write): peak %d in 1s (window at %s); claim-to-arrival min %s p50 %s p99 %s max %s\n",
			r.claimPeak, sec(r.claimPeakAt), r.lagMin.Round(100*time.Microsecond), r.lagP50.Round(100*time.Microsecond),
			r.lagP99.Round(100*time.Microsecond), r.lagMax.Round(100*time.Microsecond))
		fmt.Printf("    in the peak window: claim-to-arrival p50 %s max %s; %d of its %d arrivals were claimed before the window opened\n",
			r.peakLagP50.Round(100*time.Microsecond), r.peakLagMax.Round(100*time.Microsecond), r.peakClaimedBefore, r.peak)
		fmt.Printf("    tasks Succeeded (API server): %d; other phases %v\n", r.succeeded, r.notSucceeded)
		fmt.Printf("    RetryTask status writes %d (%.2f/task), conflicts %d, write latency p50 %s p99 %s; error log lines %d %v\n",
			r.statusWrites, float64(r.statusWrites)/numTasks, r.conflicts, r.writeP50.Round(100*time.Microsecond),
			r.writeP99.Round(100*time.Microsecond), r.errorLogs, r.firstErrors)
		if r.early > 0 {
			fmt.Printf("    EARLY: %d requests, the worst %s before the announced instant\n", r.early, r.earliest)
		}
		fmt.Printf("    arrivals per second since t0 (429s in brackets): %s\n", timeline(r.perSecond, r.perSecond429))
		fmt.Printf("    Events in the namespace: %d; the tasks that finished last:\n", r.events)
		for _, s := range r.slowest {
			fmt.Print(s)
		}
	}
	fmt.Println()

	fmt.Println("Goals (issue 5), RetryQueue run:")
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	fmt.Printf("  peak <= rate + burst (%d):         %d  %s\n", queueRate+queueBurst, q.peak, verdict(q.peak <= queueRate+queueBurst))
	fmt.Printf("  early requests == 0:                %d  %s\n", q.early, verdict(q.early == 0))
	fmt.Printf("  drain after pause <= %.2f x ideal:  %s / %s = %.3f  %s\n\n", goalRatio,
		sec(q.drainAfterPause), sec(q.ideal), q.ratio, verdict(q.ratio > 0 && q.ratio <= goalRatio))
}

// slowest describes the n tasks seen Succeeded last (or never): the server's
// arrivals, the status history and the task's Events, all from t0.
func slowest(t0 time.Time, doneAt map[string]time.Time, tasks []v1alpha1.RetryTask, log []entry, events []eventsv1.Event, n int) []string {
	rel := func(t time.Time) string { return fmt.Sprintf("%.3fs", t.Sub(t0).Seconds()) }
	sort.Slice(tasks, func(i, j int) bool {
		a, aok := doneAt[tasks[i].Name]
		c, cok := doneAt[tasks[j].Name]
		if aok != cok {
			return !aok
		}
		return a.After(c)
	})
	var out []string
	for _, t := range tasks[:min(n, len(tasks))] {
		var b strings.Builder
		done := "never"
		if at, ok := doneAt[t.Name]; ok {
			done = rel(at)
		}
		fmt.Fprintf(&b, "      %s: created %s, Succeeded seen %s, phase %s, attempts %d\n", t.Name, rel(t.CreationTimestamp.Time), done, t.Status.Phase, t.Status.Attempts)
		var arr []string
		for _, e := range log {
			if e.path == "/t/"+t.Name {
				arr = append(arr, fmt.Sprintf("%s→%d", rel(e.at), e.status))
			}
		}
		fmt.Fprintf(&b, "        server: %s\n", strings.Join(arr, " "))
		for _, h := range t.Status.History {
			fmt.Fprintf(&b, "        history: attempt %d sent %s outcome %s status %d decision %s\n", h.Number, rel(h.SentAt.Time), h.Outcome, h.StatusCode, h.Decision)
		}
		var evs []eventsv1.Event
		for _, e := range events {
			if e.Regarding.Name == t.Name {
				evs = append(evs, e)
			}
		}
		sort.Slice(evs, func(i, j int) bool { return evs[i].EventTime.Before(&evs[j].EventTime) })
		for _, e := range evs {
			fmt.Fprintf(&b, "        event %s %s: %s\n", rel(e.EventTime.Time), e.Reason, e.Note)
		}
		out = append(out, b.String())
	}
	return out
}

func timeline(all, throttled []int) string {
	var parts []string
	for s, n := range all {
		if throttled[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d:%d[%d]", s, n, throttled[s]))
		} else {
			parts = append(parts, fmt.Sprintf("%d:%d", s, n))
		}
	}
	return strings.Join(parts, " ")
}

// --- the scripted API ---

// entry is one request as the server saw it.
type entry struct {
	at     time.Time // arrival (the handler started)
	path   string
	status int
	// For a 429: when the response was flushed to the connection, and the
	// instant it announced (replied + Retry-After). The client received it
	// no earlier than replied, so its own readyAt is no earlier than
	// announced: an arrival before announced is early by any reckoning.
	replied, announced time.Time
}

type server struct {
	*httptest.Server
	mu    sync.Mutex
	first time.Time
	log   []entry
}

func newServer() *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	s.mu.Lock()
	if s.first.IsZero() {
		s.first = now
	}
	throttle := now.Sub(s.first) < throttleFor
	i := len(s.log)
	s.log = append(s.log, entry{at: now, path: r.URL.Path, status: http.StatusOK})
	s.mu.Unlock()
	if !throttle {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Retry-After", fmt.Sprint(retryAfterSeconds))
	w.WriteHeader(http.StatusTooManyRequests)
	w.(http.Flusher).Flush()
	replied := time.Now()
	s.mu.Lock()
	s.log[i].status = http.StatusTooManyRequests
	s.log[i].replied = replied
	s.log[i].announced = replied.Add(retryAfterSeconds * time.Second)
	s.mu.Unlock()
}

// entries returns the log in arrival order.
func (s *server) entries() []entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]entry(nil), s.log...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// --- the manager ---

type runningManager struct {
	cancel       context.CancelFunc
	done         chan error
	statusWrites atomic.Int64
	conflicts    atomic.Int64
	mu           sync.Mutex
	writeLatency []time.Duration
}

// startManager starts a manager limited to ns, as cmd/manager would run it
// but with no listeners and no leader election, and returns once its cache
// is synced.
func startManager(ctx context.Context, env *testenv.Env, ns string) (*runningManager, error) {
	m := &runningManager{done: make(chan error, 1)}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = managerQPS, managerBurst
	mgr, err := ctrl.NewManager(cfg, env.ManagerOptions(ns, ctrl.Log,
		func(_ *v1alpha1.RetryTask, update func() error) error {
			start := time.Now()
			err := update()
			m.statusWrites.Add(1)
			if apierrors.IsConflict(err) {
				m.conflicts.Add(1)
			}
			m.mu.Lock()
			m.writeLatency = append(m.writeLatency, time.Since(start))
			m.mu.Unlock()
			return err
		}))
	if err != nil {
		return nil, err
	}
	if _, err := controller.Setup(mgr, controller.Options{Workers: workers}); err != nil {
		return nil, err
	}
	mctx, cancel := context.WithCancel(ctx)
	m.cancel = cancel
	go func() { m.done <- mgr.Start(mctx) }()
	if !mgr.GetCache().WaitForCacheSync(mctx) {
		cancel()
		return nil, errors.New("the manager's cache did not sync")
	}
	return m, nil
}

func (m *runningManager) stop() {
	m.cancel()
	<-m.done
}

func (m *runningManager) latency(q float64) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.writeLatency) == 0 {
		return 0
	}
	l := append([]time.Duration(nil), m.writeLatency...)
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	return l[min(len(l)-1, int(q*float64(len(l))))]
}

func waitQueueReady(ctx context.Context, c client.Client, ns, name string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		q := &v1alpha1.RetryQueue{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, q); err != nil {
			return err
		}
		for _, cond := range q.Status.Conditions {
			if cond.Type == "Ready" && cond.Status == metav1.ConditionTrue {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("queue %s/%s not synced by the manager: %+v", ns, name, q.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// --- the benchmark's watch ---

// watcher records when each task was first seen Succeeded, and tasks that
// ended otherwise.
type watcher struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	ok   map[string]time.Time
	bad  map[string]v1alpha1.Phase
	last time.Time
}

func watchTasks(ctx context.Context, c client.WithWatch, ns string) (*watcher, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &watcher{cancel: cancel, done: make(chan struct{}), ok: map[string]time.Time{}, bad: map[string]v1alpha1.Phase{}}
	rv, err := w.list(ctx, c, ns)
	if err != nil {
		cancel()
		return nil, err
	}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			wi, err := c.Watch(ctx, &v1alpha1.RetryTaskList{}, client.InNamespace(ns),
				&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			if err == nil {
				rv = w.consume(wi, rv)
				wi.Stop()
			}
			if ctx.Err() != nil {
				return
			}
			// The watch ended or failed: list again so nothing is missed.
			time.Sleep(100 * time.Millisecond)
			if v, err := w.list(ctx, c, ns); err == nil {
				rv = v
			}
		}
	}()
	return w, nil
}

func (w *watcher) list(ctx context.Context, c client.Client, ns string) (string, error) {
	var l v1alpha1.RetryTaskList
	if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return "", err
	}
	for i := range l.Items {
		w.see(&l.Items[i])
	}
	return l.ResourceVersion, nil
}

func (w *watcher) consume(wi watch.Interface, rv string) string {
	for ev := range wi.ResultChan() {
		switch ev.Type {
		case watch.Added, watch.Modified:
			t := ev.Object.(*v1alpha1.RetryTask)
			w.see(t)
			rv = t.ResourceVersion
		case watch.Error:
			return rv
		}
	}
	return rv
}

func (w *watcher) see(t *v1alpha1.RetryTask) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch t.Status.Phase {
	case v1alpha1.PhaseSucceeded:
		if _, seen := w.ok[t.Name]; !seen {
			w.ok[t.Name] = now
			w.last = now
		}
	case v1alpha1.PhaseFailed, v1alpha1.PhaseEscalated, v1alpha1.PhaseOutcomeUnknown:
		w.bad[t.Name] = t.Status.Phase
	}
}

func (w *watcher) waitAll(n int, t0 time.Time, timeout time.Duration) error {
	for {
		w.mu.Lock()
		ok, bad := len(w.ok), len(w.bad)
		w.mu.Unlock()
		if ok == n {
			return nil
		}
		if ok+bad >= n {
			return fmt.Errorf("%d tasks succeeded, %d ended otherwise", ok, bad)
		}
		if time.Since(t0) > timeout {
			return fmt.Errorf("only %d of %d tasks succeeded within %s", ok, n, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *watcher) succeeded() (map[string]time.Time, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]time.Time, len(w.ok))
	for k, v := range w.ok {
		out[k] = v
	}
	return out, w.last
}

func (w *watcher) stop() {
	w.cancel()
	<-w.done
}
