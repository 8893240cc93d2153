// Package queue holds the limits a RetryQueue applies before sending: attempts
// in flight, a token bucket, hosts paused by a server's wait, and a retry
// budget. Due tasks wait in readyAt order and are released by one pump per
// queue, so a backlog never turns into a burst. It knows nothing of Kubernetes
// or HTTP; time comes from an injected clock.
package queue

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// Limits are a queue's settings.
type Limits struct {
	// MaxInFlight bounds attempts in flight; 0 means no bound.
	MaxInFlight int
	// Rate is dispatches per second; 0 means no rate limit.
	Rate  float64
	Burst int
	// PauseOnThrottle makes a server's wait pause its host for the whole queue.
	PauseOnThrottle bool
	// RetryBudgetPercent caps retries' share of dispatches; negative means none.
	RetryBudgetPercent int
}

// BudgetWindow is the sliding window the retry budget is counted over.
const BudgetWindow = 10 * time.Second

// Item is one due task waiting for the queue.
type Item struct {
	Key      string
	ReadyAt  time.Time
	Deadline time.Time
	Host     string
	// Retry is true for attempt 2 and later.
	Retry bool
	// Payload is handed back to the dispatch function.
	Payload any
}

// Dispatch sends an admitted item; release must be called once the attempt is
// over. It returns false when the item could not be started (release is then
// called by the queue).
type Dispatch func(it Item, release func()) bool

// Expire is told about an item whose deadline passed while it waited.
type Expire func(it Item)

// Snapshot is the queue's state for status.
type Snapshot struct {
	InFlight int
	Waiting  int
	Paused   map[string]time.Time
}

type record struct {
	at    time.Time
	retry bool
}

// Queue is one RetryQueue's live state.
type Queue struct {
	clock clock.Clock

	mu       sync.Mutex
	limits   Limits
	limiter  *rate.Limiter
	inFlight map[string]struct{}
	paused   map[string]time.Time
	waiting  []Item // sorted by ReadyAt, then Key
	recent   []record
	kick     chan struct{}
}

// New makes a queue. Its token bucket starts empty, so a manager restart is
// not a burst.
func New(l Limits, clk clock.Clock) *Queue {
	q := &Queue{
		clock:    clk,
		inFlight: map[string]struct{}{},
		paused:   map[string]time.Time{},
		kick:     make(chan struct{}, 1),
	}
	q.SetLimits(l)
	return q
}

// SetLimits changes the limits; the bucket keeps its level when the rate
// does not change.
func (q *Queue) SetLimits(l Limits) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	switch {
	case l.Rate <= 0:
		q.limiter = nil
	case q.limiter == nil:
		q.limiter = rate.NewLimiter(rate.Limit(l.Rate), max(l.Burst, 1))
		q.limiter.AllowN(now, max(l.Burst, 1)) // start empty
	default:
		q.limiter.SetLimitAt(now, rate.Limit(l.Rate))
		q.limiter.SetBurstAt(now, max(l.Burst, 1))
	}
	q.limits = l
	q.poke()
}

func (q *Queue) poke() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// Offer adds a due item, or refreshes it. It reports whether the item went
// straight to dispatch (true) or waits (false, with the reason).
func (q *Queue) Offer(it Item, dispatch Dispatch) (bool, string) {
	q.mu.Lock()
	if _, busy := q.inFlight[it.Key]; busy {
		q.mu.Unlock()
		return false, "an attempt of this task is already in flight"
	}
	q.remove(it.Key)
	i, _ := slices.BinarySearchFunc(q.waiting, it, less)
	q.waiting = slices.Insert(q.waiting, i, it)
	now := q.clock.Now()
	next, why, _ := q.pick(now)
	if next == nil || next.Key != it.Key {
		q.mu.Unlock()
		q.poke()
		if why == "" {
			why = "due tasks with an earlier readyAt go first"
		}
		return false, why
	}
	q.admit(next, now)
	q.mu.Unlock()
	q.start(*next, dispatch)
	return true, ""
}

func less(a, b Item) int {
	if c := a.ReadyAt.Compare(b.ReadyAt); c != 0 {
		return c
	}
	switch {
	case a.Key < b.Key:
		return -1
	case a.Key > b.Key:
		return 1
	}
	return 0
}

// remove drops a waiting item; the caller holds the lock.
func (q *Queue) remove(key string) {
	q.waiting = slices.DeleteFunc(q.waiting, func(x Item) bool { return x.Key == key })
}

// Withdraw drops a waiting item that no longer needs the queue.
func (q *Queue) Withdraw(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.remove(key)
}

// Adopt counts an attempt already in flight, found when state is rebuilt
// after a restart.
func (q *Queue) Adopt(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.inFlight[key] = struct{}{}
}

// Settle releases key's slot if it holds one; for adopted attempts whose
// result is now recorded.
func (q *Queue) Settle(key string) {
	q.mu.Lock()
	_, ok := q.inFlight[key]
	delete(q.inFlight, key)
	q.mu.Unlock()
	if ok {
		q.poke()
	}
}

// Pause stops dispatch to host until the instant; a later instant wins.
func (q *Queue) Pause(host string, until time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.limits.PauseOnThrottle {
		return
	}
	if until.After(q.paused[host]) {
		q.paused[host] = until
	}
}

// Snapshot returns the state for status.
func (q *Queue) Snapshot() Snapshot {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	s := Snapshot{InFlight: len(q.inFlight), Waiting: len(q.waiting), Paused: map[string]time.Time{}}
	for h, until := range q.paused {
		if now.Before(until) {
			s.Paused[h] = until
		}
	}
	return s
}

// pick finds the next item allowed to go now, in readyAt order. When none can,
// it says why and when to look again (zero: when a slot is released or an item
// is offered). The caller holds the lock.
func (q *Queue) pick(now time.Time) (*Item, string, time.Time) {
	if len(q.waiting) == 0 {
		return nil, "", time.Time{}
	}
	if q.limits.MaxInFlight > 0 && len(q.inFlight) >= q.limits.MaxInFlight {
		return nil, fmt.Sprintf("the queue has %d attempts in flight, its maxInFlight", len(q.inFlight)), time.Time{}
	}
	var wake time.Time
	why := ""
	retriesAllowed := q.retryAllowed(now)
	for i := range q.waiting {
		it := &q.waiting[i]
		if until, ok := q.paused[it.Host]; ok && now.Before(until) {
			why = fmt.Sprintf("host %s is paused until %s by the server's Retry-After", it.Host, until.UTC().Format(time.RFC3339Nano))
			wake = earliest(wake, until)
			continue
		}
		if it.Retry && !retriesAllowed {
			if why == "" {
				why = fmt.Sprintf("retries are over the queue's retry budget (%d%% of dispatches in %v)", q.limits.RetryBudgetPercent, BudgetWindow)
			}
			wake = earliest(wake, now.Add(time.Second))
			continue
		}
		if q.limiter != nil {
			if d := q.tokenDelay(now); d > 0 {
				return nil, fmt.Sprintf("the queue's rate limit (%g/s) has no token until %s", q.limits.Rate, now.Add(d).UTC().Format(time.RFC3339Nano)),
					earliest(wake, now.Add(d))
			}
		}
		return it, "", time.Time{}
	}
	return nil, why, wake
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// tokenDelay is how long until the bucket holds a token, without taking it.
func (q *Queue) tokenDelay(now time.Time) time.Duration {
	r := q.limiter.ReserveN(now, 1)
	d := r.DelayFrom(now)
	r.CancelAt(now)
	return d
}

// retryAllowed: one more retry keeps retries within the budget's share of the
// dispatches in the window.
func (q *Queue) retryAllowed(now time.Time) bool {
	if q.limits.RetryBudgetPercent < 0 {
		return true
	}
	cut := now.Add(-BudgetWindow)
	q.recent = slices.DeleteFunc(q.recent, func(r record) bool { return r.at.Before(cut) })
	retries := 0
	for _, r := range q.recent {
		if r.retry {
			retries++
		}
	}
	return (retries+1)*100 <= q.limits.RetryBudgetPercent*(len(q.recent)+1)
}

// admit moves the item in flight and takes its token; the caller holds the lock.
func (q *Queue) admit(it *Item, now time.Time) {
	if q.limiter != nil {
		q.limiter.AllowN(now, 1)
	}
	q.inFlight[it.Key] = struct{}{}
	q.recent = append(q.recent, record{at: now, retry: it.Retry})
	q.remove(it.Key)
}

func (q *Queue) start(it Item, dispatch Dispatch) {
	var once sync.Once
	release := func() { once.Do(func() { q.Settle(it.Key) }) }
	if !dispatch(it, release) {
		release()
	}
}

// Run is the pump: it releases waiting items as the limits allow until ctx
// ends, and hands items whose deadline passed to expire.
func (q *Queue) Run(ctx context.Context, dispatch Dispatch, expire Expire) {
	for {
		q.mu.Lock()
		now := q.clock.Now()
		var expired []Item
		q.waiting = slices.DeleteFunc(q.waiting, func(x Item) bool {
			if !x.Deadline.IsZero() && !now.Before(x.Deadline) {
				expired = append(expired, x)
				return true
			}
			return false
		})
		next, _, wake := q.pick(now)
		var it Item
		if next != nil {
			it = *next
			q.admit(next, now)
		}
		for _, x := range q.waiting {
			if !x.Deadline.IsZero() {
				wake = earliest(wake, x.Deadline)
			}
		}
		q.mu.Unlock()

		for _, x := range expired {
			expire(x)
		}
		if next != nil {
			q.start(it, dispatch)
			continue
		}
		if !q.wait(ctx, now, wake) {
			return
		}
	}
}

// wait blocks until a kick, the wake instant (zero: none) or the end of ctx,
// which it reports as false.
func (q *Queue) wait(ctx context.Context, now, wake time.Time) bool {
	var timer <-chan time.Time
	if !wake.IsZero() {
		t := q.clock.NewTimer(wake.Sub(now))
		defer t.Stop()
		timer = t.C()
	}
	select {
	case <-ctx.Done():
		return false
	case <-q.kick:
	case <-timer:
	}
	return true
}
