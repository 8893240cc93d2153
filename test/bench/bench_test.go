// Package bench measures the operator end to end against a real API server:
// throughput, status writes per attempt, how late retries are against the
// readyAt the operator announced, and the API server's own write ceiling in the
// same run. It prints figures; it asserts only what must never happen (an early
// send, a task that does not succeed).
//
//	make bench
package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
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
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/controller"
	"github.com/retry-operator/retry-operator/internal/testenv"
)

const (
	numTasks = 2000
	// attemptsPerTask: the 429, then the 200.
	attemptsPerTask = 2
	// createConcurrency is the pool of goroutines that create the tasks "at once".
	createConcurrency = 32
	// managerQPS and managerBurst are the manager's client-side rate limits.
	// client-go's defaults (5/10) would make the limiter, not the operator or
	// the API server, the thing measured.
	managerQPS, managerBurst = 1000, 2000
	// pollEvery is how often completion is checked.
	pollEvery = 500 * time.Millisecond
	// drainTimeout bounds the wait for all tasks to succeed.
	drainTimeout = 10 * time.Minute
	// lateGoal, ratioGoal: the goals of issue 4.
	lateGoal  = 250 * time.Millisecond
	ratioGoal = 0.5
)

// BenchmarkTasks runs 2,000 tasks that each get a 429 `Retry-After: 1` and then
// a 200, and compares the operator with the API server's raw write ceiling.
// It does the whole run once, whatever b.N is (run it with -benchtime 1x).
func BenchmarkTasks(b *testing.B) {
	workers := envInt(b, "BENCH_WORKERS", 8)          // controller default
	dispatchers := envInt(b, "BENCH_DISPATCHERS", 64) // controller default

	// One logger for everything in the process (manager, caches): errors are
	// counted, the rest dropped; 2,000 tasks at info level would measure the logger.
	errs := &testenv.ErrorLog{}
	ctrl.SetLogger(logr.New(errs))
	load := testenv.LoadAverage()

	env, err := testenv.Start()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)

	// The benchmark's own client (creates, the raw loop, the final List) has
	// no client-side limiter at all (QPS < 0): the raw ceiling must be the API
	// server's, not client-go's.
	fastCfg := env.UnlimitedConfig()
	fast, err := env.UnlimitedClient()
	if err != nil {
		b.Fatal(err)
	}
	opNS, rawNS := makeNamespace(ctx, b, fast, "bench-op-"), makeNamespace(ctx, b, fast, "bench-raw-")
	srv := newTarget()
	b.Cleanup(srv.Close)

	// 1. The API server's raw ceiling, first, on a fresh etcd: the strictest
	// baseline. Same concurrency as the operator's workers + dispatchers.
	rawConc := workers + dispatchers
	rawWrites, rawTook, err := rawCeiling(ctx, fast, rawNS, srv.URL+"/raw", numTasks, rawConc)
	if err != nil {
		b.Fatal(err)
	}

	// 2. The bench's own watch, to see the readyAt each task announced.
	w, err := watch(ctx, fastCfg, opNS)
	if err != nil {
		b.Fatal(err)
	}

	// 3. The manager, in process, as cmd/manager would run it but limited to
	// the bench namespace, with no listeners and no leader election.
	mgr, err := startManager(ctx, env, opNS, errs, controller.Options{Workers: workers, Dispatchers: dispatchers})
	if err != nil {
		b.Fatal(err)
	}
	heap := sampleHeap(100 * time.Millisecond)

	// 4. Create all tasks at once and wait until they have all succeeded.
	tasks := make([]*v1alpha1.RetryTask, numTasks)
	for i := range tasks {
		name := fmt.Sprintf("t-%05d", i)
		tasks[i] = newTask(opNS, name, srv.URL+"/t/"+name)
	}
	t0 := time.Now()
	if err := testenv.CreateAll(ctx, fast, tasks, createConcurrency); err != nil {
		b.Fatal(err)
	}
	created := time.Since(t0)
	if err := waitAllSucceeded(w, t0); err != nil {
		b.Fatal(err)
	}
	peakHeap, baseHeap := heap.stop()
	errCount, firstErrs := errs.Count() // before the stop's own "context canceled"
	mgr.stop()

	// The API server's word, not the watch's: every task must be Succeeded.
	var list v1alpha1.RetryTaskList
	if err := fast.List(ctx, &list, client.InNamespace(opNS)); err != nil {
		b.Fatal(err)
	}
	phases := map[v1alpha1.Phase]int{}
	for _, rt := range list.Items {
		phases[rt.Status.Phase]++
	}
	if phases[v1alpha1.PhaseSucceeded] != numTasks {
		b.Fatalf("the API server lists %v, want %d Succeeded", phases, numTasks)
	}

	var events eventsv1.EventList
	if err := fast.List(ctx, &events, client.InNamespace(opNS)); err != nil {
		b.Fatal(err)
	}

	r := analyse(t0, created, srv.log(), w, mgr)
	r.events, r.errorLogs, r.firstErrors, r.load = len(events.Items), errCount, firstErrs, load
	r.compare(rawWrites, rawTook, rawConc)
	r.workers, r.dispatchers = workers, dispatchers
	r.peakHeap, r.baseHeap = peakHeap, baseHeap
	r.print()

	b.ReportMetric(r.tasksPerSec, "tasks/s")
	b.ReportMetric(r.writesPerAttempt, "writes/attempt")
	b.ReportMetric(ms(r.late.p50), "late-p50-ms")
	b.ReportMetric(ms(r.late.p99), "late-p99-ms")
	b.ReportMetric(ms(r.late.max), "late-max-ms")
	b.ReportMetric(float64(r.early), "early")
	b.ReportMetric(float64(r.peakHeap)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(r.rawRate, "raw-writes/s")
	b.ReportMetric(r.ratio, "ratio")

	// Only what must never happen fails the benchmark; missed goals are
	// printed above.
	if r.early > 0 || r.earlyServer > 0 {
		b.Errorf("I1 violated: %d sends before the announced readyAt, %d less than 1 s after the server's 429", r.early, r.earlyServer)
	}
	if len(r.anomalies) > 0 {
		b.Errorf("unexpected: %s", strings.Join(r.anomalies, "; "))
	}
}

// runningManager is the manager under test and its status-write counters.
type runningManager struct {
	cancel       context.CancelFunc
	done         chan error
	statusWrites atomic.Int64 // RetryTask status updates sent, conflicts included
	conflicts    atomic.Int64
	mu           sync.Mutex
	writeLatency []time.Duration // of each RetryTask status write, as the manager saw it
}

// startManager starts a manager restricted to ns, counting RetryTask status
// writes like internal/controller's tests do, and returns once its cache is
// synced so that start-up is not measured.
func startManager(ctx context.Context, env *testenv.Env, ns string, log logr.LogSink, opts controller.Options) (*runningManager, error) {
	m := &runningManager{done: make(chan error, 1)}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = managerQPS, managerBurst
	mgr, err := ctrl.NewManager(cfg, env.ManagerOptions(ns, logr.New(log),
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
	if _, err := controller.Setup(mgr, opts); err != nil {
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

// newTask is a GET to url with a generous deadline: the benchmark measures
// throughput and lateness, never a deadline.
func newTask(ns, name, url string) *v1alpha1.RetryTask {
	return &v1alpha1.RetryTask{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.RetryTaskSpec{
			Request:               v1alpha1.RequestSpec{URL: url},
			ActiveDeadlineSeconds: ptr.To[int64](1800),
		},
	}
}

// waitAllSucceeded checks the bench's watch every pollEvery until every task
// is Succeeded. It polls the watch rather than Listing 2,000 objects from the
// API server twice a second, which would load the server being measured; the
// API server is asked once, at the end.
func waitAllSucceeded(w *watcher, t0 time.Time) error {
	for {
		done, bad := w.progress()
		if len(bad) > 0 {
			return fmt.Errorf("%d tasks ended other than Succeeded, e.g. %v", len(bad), firstN(bad, 5))
		}
		if done == numTasks {
			return nil
		}
		if time.Since(t0) > drainTimeout {
			return fmt.Errorf("only %d of %d tasks succeeded within %s", done, numTasks, drainTimeout)
		}
		time.Sleep(pollEvery)
	}
}

func firstN(m map[string]string, n int) map[string]string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := map[string]string{}
	for _, k := range keys[:min(n, len(keys))] {
		out[k] = m[k]
	}
	return out
}

func makeNamespace(ctx context.Context, b *testing.B, c client.Client, prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := c.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	return ns.Name
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// heapSampler records the peak HeapInuse of this process: the manager, but
// also the bench's own watch of the 2,000 tasks, its clients and the target
// server, which all live in the same process.
type heapSampler struct {
	quit chan struct{}
	done chan struct{}
	peak uint64
	base uint64
}

func sampleHeap(every time.Duration) *heapSampler {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	h := &heapSampler{quit: make(chan struct{}), done: make(chan struct{}), base: ms.HeapInuse, peak: ms.HeapInuse}
	go func() {
		defer close(h.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-h.quit:
				return
			case <-t.C:
				runtime.ReadMemStats(&ms)
				h.peak = max(h.peak, ms.HeapInuse)
			}
		}
	}()
	return h
}

// stop returns the peak and the baseline (after a GC, before the tasks).
func (h *heapSampler) stop() (peak, base uint64) {
	close(h.quit)
	<-h.done
	return h.peak, h.base
}
