package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/dispatch"
	"github.com/retry-operator/retry-operator/internal/planner"
	"github.com/retry-operator/retry-operator/internal/queue"
	"github.com/retry-operator/retry-operator/internal/retryafter"
)

// queueIndex indexes RetryTasks by spec.queue.
const queueIndex = "spec.queue"

// ReasonQueueThrottled is the Waiting reason of a task held by its queue;
// ReasonQueueNotFound is the task's reason when its queue does not exist.
const (
	ReasonQueueThrottled = "QueueThrottled"
	ReasonQueueNotFound  = "QueueNotFound"
)

// Queues holds the live state of every RetryQueue this manager has seen. The
// state is in memory and rebuilt from task statuses when a queue is first used,
// so a restart is not a burst.
type Queues struct {
	Reader client.Reader
	Clock  clock.Clock
	Runner *Runner

	mu  sync.Mutex
	m   map[types.NamespacedName]*queue.Queue
	ctx context.Context
	wg  sync.WaitGroup
	// stop cancels each queue's pump.
	stop map[types.NamespacedName]context.CancelFunc
	// names maps a task that has been in a queue to it, for deletions.
	names map[types.NamespacedName]queued
}

// Start makes Queues a manager Runnable: pumps run until the manager stops.
func (qs *Queues) Start(ctx context.Context) error {
	qs.mu.Lock()
	qs.ctx = ctx
	qs.mu.Unlock()
	<-ctx.Done()
	qs.wg.Wait()
	return nil
}

func limitsOf(rq *v1alpha1.RetryQueue) queue.Limits {
	l := queue.Limits{MaxInFlight: int(rq.Spec.MaxInFlight), PauseOnThrottle: true, RetryBudgetPercent: -1}
	if r := rq.Spec.MaxDispatchesPerSecond; r != nil {
		l.Rate = float64(*r)
		l.Burst = int(*r)
	}
	if b := rq.Spec.Burst; b != nil {
		l.Burst = int(*b)
	}
	if p := rq.Spec.PauseOnThrottle; p != nil {
		l.PauseOnThrottle = *p
	}
	if p := rq.Spec.RetryBudgetPercent; p != nil {
		l.RetryBudgetPercent = int(*p)
	}
	return l
}

// For returns the queue a task names, creating its state on first use, or nil
// when the RetryQueue does not exist.
func (qs *Queues) For(ctx context.Context, namespace, name string) (*queue.Queue, error) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	qs.mu.Lock()
	q := qs.m[key]
	qs.mu.Unlock()
	if q != nil {
		return q, nil
	}
	rq := &v1alpha1.RetryQueue{}
	if err := qs.Reader.Get(ctx, key, rq); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return qs.Sync(ctx, rq)
}

// Sync creates or updates a queue's state from its spec.
func (qs *Queues) Sync(ctx context.Context, rq *v1alpha1.RetryQueue) (*queue.Queue, error) {
	key := types.NamespacedName{Namespace: rq.Namespace, Name: rq.Name}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if q := qs.m[key]; q != nil {
		q.SetLimits(limitsOf(rq))
		return q, nil
	}
	if qs.ctx == nil {
		return nil, fmt.Errorf("queues are not started yet")
	}
	q := queue.New(limitsOf(rq), qs.Clock)
	// Attempts in flight before a restart still count against maxInFlight.
	var tasks v1alpha1.RetryTaskList
	if err := qs.Reader.List(ctx, &tasks, client.InNamespace(rq.Namespace), client.MatchingFields{queueIndex: rq.Name}); err != nil {
		return nil, err
	}
	for i := range tasks.Items {
		t := &tasks.Items[i]
		if a := t.Status.ActiveAttempt; a != nil {
			q.Adopt(string(t.UID), a.LeaseExpiresAt.Time)
			if qs.names == nil {
				qs.names = map[types.NamespacedName]queued{}
			}
			qs.names[client.ObjectKeyFromObject(t)] = queued{uid: t.UID, queue: rq.Name}
		}
		// A server's wait still in force pauses its host again.
		if until, ok := recordedServerWait(t); ok && until.After(qs.Clock.Now()) {
			q.Pause(hostOf(t.Spec.Request.URL), until)
		}
	}
	if qs.m == nil {
		qs.m = map[types.NamespacedName]*queue.Queue{}
		qs.stop = map[types.NamespacedName]context.CancelFunc{}
	}
	pumpCtx, cancel := context.WithCancel(qs.ctx)
	qs.m[key], qs.stop[key] = q, cancel
	qs.wg.Add(1)
	go func() {
		defer qs.wg.Done()
		q.Run(pumpCtx, qs.dispatch, qs.expire)
	}()
	return q, nil
}

// Remove drops a deleted queue; its waiting tasks are looked at again and
// find it missing.
func (qs *Queues) Remove(key types.NamespacedName) {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if cancel := qs.stop[key]; cancel != nil {
		cancel()
	}
	delete(qs.m, key)
	delete(qs.stop, key)
}

// Get returns a queue's state if this manager holds it.
func (qs *Queues) Get(key types.NamespacedName) *queue.Queue {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	return qs.m[key]
}

func (qs *Queues) dispatch(it queue.Item, release func()) bool {
	task := it.Payload.(*v1alpha1.RetryTask)
	if qs.Runner.Dispatch(task, ModeSend, release) {
		return true
	}
	// Refused (the runner is not started yet): look again shortly.
	time.AfterFunc(time.Second, func() { qs.Runner.poke(task) })
	return false
}

// expire sends a task whose deadline passed while queued back to the
// reconciler, which stops it with DeadlineExhausted without sending.
func (qs *Queues) expire(it queue.Item) {
	qs.Runner.poke(it.Payload.(*v1alpha1.RetryTask))
}

// of returns the queue state of a task's queue, if any is held here.
func (qs *Queues) of(task *v1alpha1.RetryTask) *queue.Queue {
	if qs == nil || task.Spec.Queue == nil {
		return nil
	}
	return qs.Get(types.NamespacedName{Namespace: task.Namespace, Name: *task.Spec.Queue})
}

// pause applies a server's wait to the task's queue, for every task to that host.
func (qs *Queues) pause(task *v1alpha1.RetryTask, until time.Time) {
	if q := qs.of(task); q != nil {
		q.Pause(hostOf(task.Spec.Request.URL), until)
	}
}

// pauseFor pauses the host of a throttling response (429 or 5xx) that carries
// a valid Retry-After, until the server's instant, counted from receipt.
func (qs *Queues) pauseFor(task *v1alpha1.RetryTask, r dispatch.Result) {
	if qs.of(task) == nil || r.Outcome != planner.Response || (r.StatusCode != 429 && r.StatusCode < 500) {
		return
	}
	ra := retryafter.Parse(r.Header.Values("Retry-After"), r.ReceivedAt)
	if ra.Source != retryafter.DeltaSeconds && ra.Source != retryafter.HTTPDate {
		return
	}
	qs.pause(task, planner.CeilMicro(r.ReceivedAt.Add(ra.Wait(r.ReceivedAt, r.Header.Values("Date")))))
}

// recordedServerWait is the instant a task's last throttling response asked
// for, as recorded in its status.
func recordedServerWait(t *v1alpha1.RetryTask) (time.Time, bool) {
	lr := t.Status.LastResponse
	if lr == nil || t.Status.ReadyAt == nil || (lr.StatusCode != 429 && lr.StatusCode < 500) {
		return time.Time{}, false
	}
	if lr.RetryAfterSource != string(retryafter.DeltaSeconds) && lr.RetryAfterSource != string(retryafter.HTTPDate) {
		return time.Time{}, false
	}
	return t.Status.ReadyAt.Time, true
}

// withdraw takes a task that no longer needs its queue out of it: deleted,
// finished or held for a human.
func (qs *Queues) withdraw(namespace, queueName string, uid types.UID) {
	if q := qs.Get(types.NamespacedName{Namespace: namespace, Name: queueName}); q != nil {
		q.Withdraw(string(uid))
		q.Settle(string(uid))
	}
}

// remember notes which queue a task waits in, so that its deletion, seen
// only by name, can withdraw it.
func (qs *Queues) remember(t *v1alpha1.RetryTask) {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if qs.names == nil {
		qs.names = map[types.NamespacedName]queued{}
	}
	qs.names[client.ObjectKeyFromObject(t)] = queued{uid: t.UID, queue: *t.Spec.Queue}
}

// forget withdraws a deleted task known only by name.
func (qs *Queues) forget(key types.NamespacedName) {
	qs.mu.Lock()
	e, ok := qs.names[key]
	delete(qs.names, key)
	qs.mu.Unlock()
	if ok {
		qs.withdraw(key.Namespace, e.queue, e.uid)
	}
}

type queued struct {
	uid   types.UID
	queue string
}

// queueItem describes a due task to its queue.
func queueItem(t *v1alpha1.RetryTask) queue.Item {
	it := queue.Item{
		Key:     string(t.UID),
		ReadyAt: t.CreationTimestamp.Time,
		Host:    hostOf(t.Spec.Request.URL),
		Retry:   t.Status.Attempts > 0,
		Payload: t,
	}
	if t.Status.ReadyAt != nil {
		it.ReadyAt = t.Status.ReadyAt.Time
	}
	if t.Status.Deadline != nil {
		it.Deadline = t.Status.Deadline.Time
	}
	return it
}
