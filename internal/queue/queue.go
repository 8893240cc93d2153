// Package queue holds the limits a RetryQueue applies before sending: attempts
// in flight, a token bucket, hosts paused by a server's wait, and a retry
// budget. Due tasks wait in readyAt order and are released by one pump per
// queue, so a backlog never turns into a burst. It knows nothing of Kubernetes
// or HTTP; time comes from an injected clock.
package queue

import (
	"context"
	"fmt"
	"math"
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
	// RetryBudgetPercent caps retries' share of dispatches while first
	// attempts compete for them; negative means none. When no first attempt
	// can go, a retry over the budget still goes: the budget gives first
	// attempts precedence, it never leaves the queue idle.
	RetryBudgetPercent int
}

// BudgetWindow is the sliding window the retry budget is counted over.
const BudgetWindow = 10 * time.Second

// Item is one due task waiting for the queue.
type Item struct {
	Key string
	// ReadyAt is the earliest instant the item may be dispatched; the queue
	// never dispatches it earlier.
	ReadyAt time.Time
	// Deadline, when set, is the instant from which the item is never
	// dispatched; it is handed to Expire instead.
	Deadline time.Time
	Host     string
	// Retry is true for attempt 2 and later.
	Retry bool
	// Payload is handed back to the dispatch function.
	Payload any
}

// Dispatch sends an admitted item; release must be called once the attempt is
// over. It returns false when the item could not be started (release is then
// called by the queue). It must not block: the pump calls it and admits
// nothing else meanwhile.
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

// adopted marks an in-flight slot taken by Adopt rather than by a dispatch.
const adopted = 0

// Queue is one RetryQueue's live state.
type Queue struct {
	clock clock.Clock

	mu      sync.Mutex
	limits  Limits
	limiter *rate.Limiter
	// gate is a second bucket with the same limits, taken just before the
	// request goes out: the claim write between admission and send takes a
	// variable time, so admissions alone can bunch up at the server.
	gate *rate.Limiter
	// inFlight maps a key to the admission holding its slot (adopted for
	// Adopt), so that a late release never frees a later attempt's slot.
	inFlight map[string]uint64
	// adoptedUntil holds when each adopted slot frees itself: the lease of
	// the attempt it stands for, so a task deleted meanwhile cannot leak it.
	adoptedUntil map[string]time.Time
	admitted     uint64
	paused       map[string]time.Time
	waiting      []Item // sorted by ReadyAt, then Key
	// recent holds the dispatches in the budget window, oldest first, and
	// retries counts the retries among them.
	recent  []record
	retries int
	kick    chan struct{}

	// kicks counts pokes and handled is the count the pump last looked at;
	// parked holds, while the pump is blocked, the instant its timer fires
	// (zero: no timer), nil while it works. Tests use them to know that the
	// pump has caught up.
	kicks, handled uint64
	parked         *time.Time
}

// New makes a queue. Its token bucket starts empty, so a manager restart is
// not a burst.
func New(l Limits, clk clock.Clock) *Queue {
	q := &Queue{
		clock:        clk,
		inFlight:     map[string]uint64{},
		adoptedUntil: map[string]time.Time{},
		paused:       map[string]time.Time{},
		kick:         make(chan struct{}, 1),
	}
	q.SetLimits(l)
	return q
}

// SetLimits changes the limits; the bucket keeps its level when the rate
// does not change. Turning PauseOnThrottle off lifts the pauses in force.
func (q *Queue) SetLimits(l Limits) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	q.limiter = setRate(q.limiter, l, now)
	q.gate = setRate(q.gate, l, now)
	if !l.PauseOnThrottle {
		clear(q.paused)
	}
	q.limits = l
	q.poke()
}

// poke wakes the pump; the caller holds the lock.
// setRate makes, updates or drops a token bucket for the limits. A new bucket
// starts empty, so a manager restart is not a burst.
func setRate(lim *rate.Limiter, l Limits, now time.Time) *rate.Limiter {
	switch {
	case l.Rate <= 0:
		return nil
	case lim == nil:
		lim = rate.NewLimiter(rate.Limit(l.Rate), max(l.Burst, 1))
		lim.AllowN(now, max(l.Burst, 1))
	default:
		lim.SetLimitAt(now, rate.Limit(l.Rate))
		lim.SetBurstAt(now, max(l.Burst, 1))
	}
	return lim
}

// Gate waits, on the queue's clock, for a token of the send-side bucket. It
// returns false at once when the token would come after latest (zero: no
// bound), and false if ctx ends first. Callers re-check the deadline after it.
func (q *Queue) Gate(ctx context.Context, latest time.Time) bool {
	q.mu.Lock()
	if q.gate == nil {
		q.mu.Unlock()
		return true
	}
	now := q.clock.Now()
	r := q.gate.ReserveN(now, 1)
	d := r.DelayFrom(now)
	if !latest.IsZero() && now.Add(d).After(latest) {
		r.CancelAt(now)
		q.mu.Unlock()
		return false
	}
	q.mu.Unlock()
	if d <= 0 {
		return true
	}
	t := q.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		q.mu.Lock()
		r.CancelAt(q.clock.Now())
		q.mu.Unlock()
		return false
	}
}

func (q *Queue) poke() {
	q.kicks++
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// Offer adds a due item, or refreshes it. It reports whether the item went
// straight to dispatch (true) or waits (false, with the reason). An item whose
// key has an attempt in flight is refused (false), not kept: offer it again
// once that attempt is over. A refresh never moves an item's ReadyAt earlier.
// An item whose deadline has passed is never dispatched; the pump hands it to
// expire.
func (q *Queue) Offer(it Item, dispatch Dispatch) (bool, string) {
	q.mu.Lock()
	if _, busy := q.inFlight[it.Key]; busy {
		q.mu.Unlock()
		return false, "an attempt of this task is already in flight"
	}
	if i := slices.IndexFunc(q.waiting, func(x Item) bool { return x.Key == it.Key }); i >= 0 {
		if q.waiting[i].ReadyAt.After(it.ReadyAt) {
			it.ReadyAt = q.waiting[i].ReadyAt // I3: never earlier
		}
		q.waiting = slices.Delete(q.waiting, i, i+1)
	}
	i, _ := slices.BinarySearchFunc(q.waiting, it, less)
	q.waiting = slices.Insert(q.waiting, i, it)
	now := q.clock.Now()
	next, why, _ := q.pick(now)
	if next == nil || next.Key != it.Key {
		switch {
		case !it.Deadline.IsZero() && !now.Before(it.Deadline):
			why = "its deadline has passed"
		case it.ReadyAt.After(now):
			why = "it is not due until " + stamp(it.ReadyAt)
		case q.paused[it.Host].After(now):
			why = fmt.Sprintf("host %s is paused until %s by the server's Retry-After", it.Host, stamp(q.paused[it.Host]))
		case why == "":
			why = "due tasks with an earlier readyAt go first"
		}
		q.poke()
		q.mu.Unlock()
		return false, why
	}
	sent := *next // admit removes it from waiting
	gen := q.admit(next, now)
	q.mu.Unlock()
	q.start(sent, gen, dispatch)
	return true, ""
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

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
// after a restart, until Settle or until the instant (the attempt's lease),
// whichever comes first. A waiting item with that key is dropped.
func (q *Queue) Adopt(key string, until time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.inFlight[key]; !ok {
		q.inFlight[key] = adopted
		q.adoptedUntil[key] = until
	}
	q.remove(key)
	q.poke()
}

// expireAdopted frees adopted slots whose lease has passed and returns the
// next such instant (zero: none). The caller holds the lock.
func (q *Queue) expireAdopted(now time.Time) time.Time {
	var next time.Time
	for k, until := range q.adoptedUntil {
		if !now.Before(until) {
			delete(q.adoptedUntil, k)
			if q.inFlight[k] == adopted {
				delete(q.inFlight, k)
			}
			continue
		}
		next = earliest(next, until)
	}
	return next
}

// Settle releases key's slot if Adopt took it; for adopted attempts whose
// result is now recorded. A slot taken by a dispatch is released only by its
// release function, so an early Settle cannot let the queue exceed
// maxInFlight.
func (q *Queue) Settle(key string) {
	q.free(key, adopted)
}

// free releases key's slot if admission gen holds it.
func (q *Queue) free(key string, gen uint64) {
	q.mu.Lock()
	g, ok := q.inFlight[key]
	if ok && g == gen {
		delete(q.inFlight, key)
		if gen == adopted {
			delete(q.adoptedUntil, key)
		}
		q.poke()
	}
	q.mu.Unlock()
}

// Pause stops dispatch to host until the instant; a later instant wins. It
// does nothing unless the limits say PauseOnThrottle.
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
	for h, until := range q.paused {
		if !now.Before(until) {
			delete(q.paused, h)
		}
	}
	var (
		wake        time.Time
		why         string
		found, over *Item
	)
	retriesAllowed := q.retryAllowed(now)
	for i := range q.waiting {
		it := &q.waiting[i]
		if it.ReadyAt.After(now) {
			// Sorted by ReadyAt: nothing after it is due either.
			wake = earliest(wake, it.ReadyAt)
			break
		}
		if !it.Deadline.IsZero() && !now.Before(it.Deadline) {
			continue // the pump hands it to expire
		}
		if _, busy := q.inFlight[it.Key]; busy {
			continue
		}
		if until, ok := q.paused[it.Host]; ok {
			if why == "" {
				why = fmt.Sprintf("host %s is paused until %s by the server's Retry-After", it.Host, stamp(until))
			}
			wake = earliest(wake, until)
			continue
		}
		if it.Retry && !retriesAllowed {
			if over == nil {
				over = it
			}
			continue
		}
		found = it
		break
	}
	if found == nil {
		// No first attempt can go: a retry over the budget takes no
		// dispatch away from one.
		found = over
	}
	if found == nil {
		return nil, why, wake
	}
	if q.limiter != nil {
		if d := q.tokenDelay(now); d > 0 {
			return nil, fmt.Sprintf("the queue's rate limit (%g/s) has no token until %s", q.limits.Rate, stamp(now.Add(d))),
				earliest(wake, now.Add(d))
		}
	}
	return found, "", time.Time{}
}

func earliest(a, b time.Time) time.Time {
	if b.IsZero() {
		return a
	}
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// tokenDelay is how long until the bucket holds a token, rounded up so that
// the bucket does hold one then.
func (q *Queue) tokenDelay(now time.Time) time.Duration {
	tokens := q.limiter.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	return time.Duration(math.Ceil((1 - tokens) / float64(q.limiter.Limit()) * float64(time.Second)))
}

// prune drops dispatch records older than the budget window; the caller
// holds the lock.
func (q *Queue) prune(now time.Time) {
	cut := now.Add(-BudgetWindow)
	i := 0
	for ; i < len(q.recent) && !q.recent[i].at.After(cut); i++ {
		if q.recent[i].retry {
			q.retries--
		}
	}
	q.recent = slices.Delete(q.recent, 0, i)
}

// retryAllowed: one more retry keeps retries within the budget's share of the
// dispatches in the window.
func (q *Queue) retryAllowed(now time.Time) bool {
	if q.limits.RetryBudgetPercent < 0 {
		return true
	}
	q.prune(now)
	return (q.retries+1)*100 <= q.limits.RetryBudgetPercent*(len(q.recent)+1)
}

// admit moves the item in flight and takes its token; the caller holds the
// lock. It returns the admission's number, for its release.
func (q *Queue) admit(it *Item, now time.Time) uint64 {
	if q.limiter != nil {
		q.limiter.AllowN(now, 1)
	}
	q.admitted++
	q.inFlight[it.Key] = q.admitted
	q.prune(now)
	q.recent = append(q.recent, record{at: now, retry: it.Retry})
	if it.Retry {
		q.retries++
	}
	q.remove(it.Key)
	return q.admitted
}

func (q *Queue) start(it Item, gen uint64, dispatch Dispatch) {
	var once sync.Once
	release := func() { once.Do(func() { q.free(it.Key, gen) }) }
	if !dispatch(it, release) {
		release()
	}
}

// Run is the pump: it releases waiting items as the limits allow until ctx
// ends, and hands items whose deadline passed to expire.
func (q *Queue) Run(ctx context.Context, dispatch Dispatch, expire Expire) {
	for {
		q.mu.Lock()
		q.handled, q.parked = q.kicks, nil
		now := q.clock.Now()
		var expired []Item
		q.waiting = slices.DeleteFunc(q.waiting, func(x Item) bool {
			if !x.Deadline.IsZero() && !now.Before(x.Deadline) {
				expired = append(expired, x)
				return true
			}
			return false
		})
		adoptedWake := q.expireAdopted(now)
		next, _, wake := q.pick(now)
		wake = earliest(wake, adoptedWake)
		var (
			it  Item
			gen uint64
		)
		if next != nil {
			it = *next
			gen = q.admit(next, now)
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
			q.start(it, gen, dispatch)
			continue
		}
		if !q.wait(ctx, wake) {
			return
		}
	}
}

// wait blocks until a kick, the wake instant (zero: none) or the end of ctx,
// which it reports as false.
func (q *Queue) wait(ctx context.Context, wake time.Time) bool {
	var timer <-chan time.Time
	if !wake.IsZero() {
		d := wake.Sub(q.clock.Now())
		if d <= 0 {
			return ctx.Err() == nil
		}
		t := q.clock.NewTimer(d)
		defer t.Stop()
		timer = t.C()
	}
	q.mu.Lock()
	q.parked = &wake
	q.mu.Unlock()
	select {
	case <-ctx.Done():
		return false
	case <-q.kick:
	case <-timer:
	}
	return true
}
