package controller_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/controller"
	"github.com/retry-operator/retry-operator/internal/testenv"
)

var env *testenv.Env

// logs captures every manager's log output, to prove no secret reaches it (I7).
var logs = &syncBuffer{}

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// namespace makes a fresh namespace for one test.
func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// manager is a running manager limited to one namespace.
type manager struct {
	cancel       context.CancelFunc
	done         chan struct{}
	statusWrites atomic.Int64
}

// managerOpts configures a test manager: fail, when set, is asked before every
// RetryTask status write and may return an error to inject (the write is then
// not made).
type managerOpts struct {
	config      *rest.Config
	leaseGrace  time.Duration
	workers     int
	dispatchers int
	fail        func(rt *v1alpha1.RetryTask) error
	// drain lets attempts in flight finish when the manager stops; by
	// default a test manager's stop is a crash.
	drain bool
}

func startManager(t *testing.T, ns string, o managerOpts) *manager {
	t.Helper()
	cfg := o.config
	if cfg == nil {
		cfg = env.Config
	}
	m := &manager{done: make(chan struct{})}
	mgr, err := ctrl.NewManager(cfg, env.ManagerOptions(ns, zap.New(zap.WriteTo(logs), zap.UseDevMode(true)),
		func(rt *v1alpha1.RetryTask, update func() error) error {
			m.statusWrites.Add(1)
			if o.fail != nil {
				if err := o.fail(rt); err != nil {
					return err
				}
			}
			return update()
		}))
	if err != nil {
		t.Fatal(err)
	}
	grace := o.leaseGrace
	if grace == 0 {
		grace = time.Second
	}
	if _, err := controller.Setup(mgr, controller.Options{LeaseGrace: grace, Workers: o.workers, Dispatchers: o.dispatchers, AbortOnStop: !o.drain}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(m.stop)
	return m
}

// stop stops the manager and waits for it, as a crash would from the API
// server's point of view.
func (m *manager) stop() {
	m.cancel()
	<-m.done
}

// arrival is one request as the test server saw it.
type arrival struct {
	at      time.Time
	path    string
	header  http.Header
	replied time.Time
}

// api is a scripted, rate-limited HTTP API on loopback.
type api struct {
	*httptest.Server
	mu       sync.Mutex
	arrivals []arrival
	perPath  map[string]int
	inFlight atomic.Int64
	peak     atomic.Int64
}

// newAPI serves script(n, w, r) for the n-th request (from 1) to each path.
func newAPI(t *testing.T, script func(n int, w http.ResponseWriter, r *http.Request)) *api {
	t.Helper()
	a := &api{perPath: map[string]int{}}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur := a.inFlight.Add(1)
		defer a.inFlight.Add(-1)
		for p := a.peak.Load(); cur > p && !a.peak.CompareAndSwap(p, cur); p = a.peak.Load() {
		}
		a.mu.Lock()
		a.perPath[r.URL.Path]++
		n := a.perPath[r.URL.Path]
		a.arrivals = append(a.arrivals, arrival{at: time.Now(), path: r.URL.Path, header: r.Header.Clone()})
		i := len(a.arrivals) - 1
		a.mu.Unlock()
		script(n, w, r)
		a.mu.Lock()
		a.arrivals[i].replied = time.Now()
		a.mu.Unlock()
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *api) seen(path string) []arrival {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []arrival
	for _, x := range a.arrivals {
		if x.path == path {
			out = append(out, x)
		}
	}
	return out
}

// task builds a GET RetryTask against url with a 60 s deadline.
func task(ns, name, url string, mutate ...func(*v1alpha1.RetryTask)) *v1alpha1.RetryTask {
	t := &v1alpha1.RetryTask{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.RetryTaskSpec{
			Request:               v1alpha1.RequestSpec{URL: url},
			ActiveDeadlineSeconds: ptr.To[int64](60),
		},
	}
	for _, m := range mutate {
		m(t)
	}
	return t
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, ns, name string) *v1alpha1.RetryTask {
	t.Helper()
	rt := &v1alpha1.RetryTask{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, rt); err != nil {
		t.Fatal(err)
	}
	return rt
}

// waitFor polls the task until cond holds, and fails with its status otherwise.
func waitFor(t *testing.T, ns, name string, timeout time.Duration, what string, cond func(*v1alpha1.RetryTask) bool) *v1alpha1.RetryTask {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		rt := get(t, ns, name)
		if cond(rt) {
			return rt
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s: timed out waiting for %s; status: %s", ns, name, what, describe(rt))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func inPhase(p v1alpha1.Phase) func(*v1alpha1.RetryTask) bool {
	return func(rt *v1alpha1.RetryTask) bool { return rt.Status.Phase == p }
}

func describe(rt *v1alpha1.RetryTask) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s reason=%s attempts=%d", rt.Status.Phase, rt.Status.Reason, rt.Status.Attempts)
	for _, c := range rt.Status.Conditions {
		fmt.Fprintf(&b, "\n  %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

func condition(rt *v1alpha1.RetryTask, typ string) metav1.Condition {
	for _, c := range rt.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

func path(name string) string { return "/t/" + name }

func keyOf(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}
