package bench

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/testenv"
)

// watcher records, from a watch of its own, what the operator announced: the
// readyAt each task had while Waiting (the operator clears it when it claims
// the next attempt, so only a watch sees every value), and when each task was
// first seen Succeeded. It never writes.
type watcher struct {
	mu        sync.Mutex
	readyAt   map[string]time.Time // task name → readyAt announced while Waiting
	readyAts  map[string]int       // distinct readyAt values seen per task (I3: expect 1)
	claimed   map[string]time.Time // task name → activeAttempt.startedAt of attempt 2 (the retry's claim)
	succeeded map[string]time.Time // task name → first seen Succeeded (local clock)
	bad       map[string]string    // task name → a terminal phase other than Succeeded
}

// watch starts an informer on RetryTasks in ns and returns once it is synced.
func watch(ctx context.Context, cfg *rest.Config, ns string) (*watcher, error) {
	w := &watcher{
		readyAt: map[string]time.Time{}, readyAts: map[string]int{}, claimed: map[string]time.Time{},
		succeeded: map[string]time.Time{}, bad: map[string]string{},
	}
	c, err := cache.New(cfg, cache.Options{
		Scheme:            testenv.Scheme(),
		DefaultNamespaces: map[string]cache.Config{ns: {}},
	})
	if err != nil {
		return nil, err
	}
	inf, err := c.GetInformer(ctx, &v1alpha1.RetryTask{})
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    w.see,
		UpdateFunc: func(_, obj any) { w.see(obj) },
	}); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the bench's RetryTask watch did not sync")
	}
	return w, nil
}

func (w *watcher) see(obj any) {
	rt, ok := obj.(*v1alpha1.RetryTask)
	if !ok {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch s := rt.Status; s.Phase {
	case v1alpha1.PhaseWaiting:
		if s.ReadyAt != nil {
			if prev, seen := w.readyAt[rt.Name]; !seen || !prev.Equal(s.ReadyAt.Time) {
				w.readyAts[rt.Name]++
			}
			w.readyAt[rt.Name] = s.ReadyAt.Time
		}
	case v1alpha1.PhaseDispatching:
		if a := s.ActiveAttempt; a != nil && a.Number == attemptsPerTask {
			w.claimed[rt.Name] = a.StartedAt.Time
		}
	case v1alpha1.PhaseSucceeded:
		if _, seen := w.succeeded[rt.Name]; !seen {
			w.succeeded[rt.Name] = now
		}
	case v1alpha1.PhaseFailed, v1alpha1.PhaseEscalated, v1alpha1.PhaseOutcomeUnknown:
		w.bad[rt.Name] = fmt.Sprintf("%s/%s", s.Phase, s.Reason)
	}
}

// progress returns how many tasks succeeded, and those that ended otherwise.
func (w *watcher) progress() (int, map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.succeeded), maps.Clone(w.bad)
}

// seen is a copy of what the watcher recorded.
type seen struct {
	readyAt, claimed, succeeded map[string]time.Time
	distinct                    map[string]int
}

func (w *watcher) snapshot() seen {
	w.mu.Lock()
	defer w.mu.Unlock()
	return seen{readyAt: maps.Clone(w.readyAt), claimed: maps.Clone(w.claimed), succeeded: maps.Clone(w.succeeded), distinct: maps.Clone(w.readyAts)}
}
