package queue

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

const hostA, hostB = "a.example.com", "b.example.com"

func item(key string, readyAt time.Time) Item {
	return Item{Key: key, ReadyAt: readyAt, Host: hostA, Payload: "payload-" + key}
}

func retry(key string, readyAt time.Time) Item {
	it := item(key, readyAt)
	it.Retry = true
	return it
}

// recorder is a Dispatch and an Expire that remember what they were given.
type recorder struct {
	clk      *clocktesting.FakeClock
	mu       sync.Mutex
	sent     []Item
	sentAt   []time.Time
	releases map[string]func()
	expired  []Item
	inFlight int
	peak     int
	refuse   map[string]bool
}

func (r *recorder) dispatch(it Item, release func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refuse[it.Key] {
		return false
	}
	r.sent = append(r.sent, it)
	r.sentAt = append(r.sentAt, r.clk.Now())
	r.inFlight++
	r.peak = max(r.peak, r.inFlight)
	var once sync.Once
	r.releases[it.Key] = func() {
		once.Do(func() {
			r.mu.Lock()
			r.inFlight--
			r.mu.Unlock()
			release()
		})
	}
	return true
}

func (r *recorder) expire(it Item) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expired = append(r.expired, it)
}

func (r *recorder) sentKeys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := []string{}
	for _, it := range r.sent {
		keys = append(keys, it.Key)
	}
	return keys
}

func (r *recorder) expiredKeys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := []string{}
	for _, it := range r.expired {
		keys = append(keys, it.Key)
	}
	return keys
}

// harness runs one queue's pump on a fake clock.
type harness struct {
	t   testing.TB
	clk *clocktesting.FakeClock
	q   *Queue
	*recorder
}

func start(t testing.TB, l Limits) *harness {
	return startOn(t, clocktesting.NewFakeClock(t0), l)
}

func startOn(t testing.TB, clk *clocktesting.FakeClock, l Limits) *harness {
	h := &harness{t: t, clk: clk, q: New(l, clk),
		recorder: &recorder{clk: clk, releases: map[string]func(){}, refuse: map[string]bool{}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.q.Run(ctx, h.dispatch, h.expire)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Errorf("the pump did not stop when its context ended")
		}
	})
	h.settle()
	return h
}

// idle reports whether the pump is blocked with nothing left to do: it has
// looked at every poke and its timer (if any) is not due.
func (q *Queue) idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.parked != nil && q.kicks == q.handled && (q.parked.IsZero() || q.clock.Now().Before(*q.parked))
}

// settle waits, in real time, until the pump has caught up with the queue's
// state and the fake clock.
func (h *harness) settle() {
	h.t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !h.q.idle() {
		if time.Now().After(deadline) {
			h.t.Fatalf("the pump did not settle")
		}
		time.Sleep(20 * time.Microsecond)
	}
}

func (h *harness) offer(it Item) (bool, string) {
	h.t.Helper()
	sent, why := h.q.Offer(it, h.dispatch)
	h.settle()
	return sent, why
}

func (h *harness) step(d time.Duration) {
	h.t.Helper()
	h.clk.Step(d)
	h.settle()
}

// stepTo moves the fake clock to an instant.
func (h *harness) stepTo(at time.Time) {
	h.t.Helper()
	h.step(at.Sub(h.clk.Now()))
}

func (h *harness) release(key string) {
	h.t.Helper()
	h.mu.Lock()
	rel := h.releases[key]
	h.mu.Unlock()
	if rel == nil {
		h.t.Fatalf("%s was never dispatched", key)
	}
	rel()
	h.settle()
}

func (h *harness) settleKey(key string) {
	h.t.Helper()
	h.q.Settle(key)
	h.settle()
}

func (h *harness) wantSent(want ...string) {
	h.t.Helper()
	if got := h.sentKeys(); !slices.Equal(got, want) {
		h.t.Fatalf("dispatched %v, want %v", got, want)
	}
}

func (h *harness) wantSnapshot(inFlight, waiting int) Snapshot {
	h.t.Helper()
	s := h.q.Snapshot()
	if s.InFlight != inFlight || s.Waiting != waiting {
		h.t.Fatalf("snapshot in flight %d waiting %d, want %d and %d", s.InFlight, s.Waiting, inFlight, waiting)
	}
	return s
}

func keys(prefix string, n int) []string {
	var ks []string
	for i := range n {
		ks = append(ks, fmt.Sprintf("%s%02d", prefix, i))
	}
	return ks
}

func TestMaxInFlightNeverExceeded(t *testing.T) {
	h := start(t, Limits{MaxInFlight: 4, RetryBudgetPercent: -1})
	all := keys("t", 50)
	for i, k := range all {
		sent, why := h.offer(item(k, t0))
		if sent != (i < 4) {
			t.Fatalf("offer %d went straight to dispatch: %v (%s)", i, sent, why)
		}
		if !sent && !strings.Contains(why, "maxInFlight") {
			t.Fatalf("offer %d waits because %q, want maxInFlight", i, why)
		}
	}
	h.wantSent(all[:4]...)
	h.wantSnapshot(4, 46)
	for i, k := range all {
		h.release(k)
		h.wantSent(all[:min(i+5, len(all))]...)
	}
	h.wantSnapshot(0, 0)
	if h.peak != 4 {
		t.Fatalf("peak in flight %d, want 4", h.peak)
	}
}

// Releases come from many goroutines at once, as real attempts end.
func TestMaxInFlightUnderConcurrentReleases(t *testing.T) {
	const limit, workers, each = 3, 8, 25
	clk := clocktesting.NewFakeClock(t0)
	q := New(Limits{MaxInFlight: limit, RetryBudgetPercent: -1}, clk)
	var inFlight, peak, done atomic.Int64
	finished := make(chan struct{})
	dispatch := func(it Item, release func()) bool {
		n := inFlight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		go func() {
			inFlight.Add(-1)
			release()
			if done.Add(1) == workers*each {
				close(finished)
			}
		}()
		return true
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.Run(ctx, dispatch, func(Item) { t.Errorf("nothing expires") })
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				q.Offer(item(fmt.Sprintf("w%d-%02d", w, i), t0), dispatch)
			}
		}()
	}
	wg.Wait()
	select {
	case <-finished:
	case <-time.After(2 * time.Second):
		t.Fatalf("only %d of %d dispatched", done.Load(), workers*each)
	}
	if p := peak.Load(); p > limit {
		t.Fatalf("peak in flight %d, above maxInFlight %d", p, limit)
	}
}

func TestReadyAtOrderTiesByKey(t *testing.T) {
	h := start(t, Limits{MaxInFlight: 1, RetryBudgetPercent: -1})
	h.q.Adopt("blocker", forever)
	for _, it := range []Item{
		item("c", t0.Add(-time.Second)),
		item("a", t0.Add(-2*time.Second)),
		item("b", t0.Add(-time.Second)),
		item("z", t0.Add(-3*time.Second)),
		item("d", t0.Add(-time.Second)),
	} {
		h.offer(it)
	}
	h.wantSent()
	h.settleKey("blocker")
	want := []string{"z", "a", "b", "c", "d"}
	for i, k := range want {
		h.wantSent(want[:i+1]...)
		h.release(k)
	}
}

// I1: an item is never dispatched before its ReadyAt.
func TestNeverBeforeReadyAt(t *testing.T) {
	h := start(t, Limits{RetryBudgetPercent: -1})
	readyAt := t0.Add(1500 * time.Millisecond)
	sent, why := h.offer(item("k", readyAt))
	if sent || !strings.Contains(why, "not due") {
		t.Fatalf("offer = %v %q, want a wait until readyAt", sent, why)
	}
	h.stepTo(readyAt.Add(-time.Nanosecond))
	h.wantSent()
	h.step(time.Nanosecond)
	h.wantSent("k")
	if !h.sentAt[0].Equal(readyAt) {
		t.Fatalf("sent at %v, want %v", h.sentAt[0], readyAt)
	}
}

func TestTokenBucketStartsEmptyThenRateAndBurst(t *testing.T) {
	h := start(t, Limits{Rate: 2, Burst: 3, RetryBudgetPercent: -1})
	all := keys("t", 30)
	for _, k := range all {
		sent, why := h.offer(item(k, t0))
		if sent || !strings.Contains(why, "rate limit") {
			t.Fatalf("offer %s = %v %q: the bucket starts empty, so a restart is not a burst", k, sent, why)
		}
	}
	h.wantSent()
	h.step(499 * time.Millisecond)
	h.wantSent()
	h.step(time.Millisecond)
	h.wantSent(all[:1]...)
	// One token every 500ms, never more.
	for elapsed := 600 * time.Millisecond; elapsed <= 10*time.Second; elapsed += 100 * time.Millisecond {
		h.stepTo(t0.Add(elapsed))
		h.wantSent(all[:int(elapsed/(500*time.Millisecond))]...)
	}
	// Idle long enough to fill the bucket: it holds burst tokens, not more.
	for _, k := range all[20:] {
		h.q.Withdraw(k)
	}
	h.step(10 * time.Second)
	more := keys("u", 10)
	for i, k := range more {
		if sent, _ := h.offer(item(k, h.clk.Now())); sent != (i < 3) {
			t.Fatalf("offer %d after the bucket filled: sent %v, want %v", i, sent, i < 3)
		}
	}
	h.wantSent(append(all[:20:20], more[:3]...)...)
	h.step(499 * time.Millisecond)
	h.wantSent(append(all[:20:20], more[:3]...)...)
	h.step(time.Millisecond)
	h.wantSent(append(all[:20:20], more[:4]...)...)
}

// Arrivals in any 1-second window never exceed rate + burst, however the
// offers come.
func TestRateNeverAboveRatePlusBurst(t *testing.T) {
	const rate, burst = 5, 4
	h := start(t, Limits{Rate: rate, Burst: burst, RetryBudgetPercent: -1})
	n := 0
	for tick := range 300 { // 30 s in 100ms steps
		// Bursty offers: 12 at once every 4 s, one now and then.
		if tick%40 == 0 {
			for range 12 {
				h.offer(item(fmt.Sprintf("k%03d", n), h.clk.Now()))
				n++
			}
		} else if tick%7 == 0 {
			h.offer(item(fmt.Sprintf("k%03d", n), h.clk.Now()))
			n++
		}
		h.step(100 * time.Millisecond)
	}
	if len(h.sentAt) < 80 {
		t.Fatalf("only %d of %d dispatched", len(h.sentAt), n)
	}
	for i, from := range h.sentAt {
		in := 0
		for _, at := range h.sentAt[i:] {
			if at.Sub(from) < time.Second {
				in++
			}
		}
		if in > rate+burst {
			t.Fatalf("%d dispatches in the second from %v, above rate+burst %d", in, from, rate+burst)
		}
	}
}

func TestPauseHoldsHostUntilExactly(t *testing.T) {
	h := start(t, Limits{PauseOnThrottle: true, RetryBudgetPercent: -1})
	until := t0.Add(3500 * time.Millisecond)
	h.q.Pause(hostA, until)
	h.q.Pause(hostA, t0.Add(2*time.Second)) // an earlier instant never shortens a pause
	sent, why := h.offer(item("a1", t0))
	if sent || !strings.Contains(why, "paused") {
		t.Fatalf("offer to a paused host = %v %q", sent, why)
	}
	b := item("b1", t0)
	b.Host = hostB
	if sent, _ := h.offer(b); !sent {
		t.Fatalf("a task for another host waits")
	}
	s := h.wantSnapshot(1, 1)
	if len(s.Paused) != 1 || !s.Paused[hostA].Equal(until) {
		t.Fatalf("paused %v, want %s until %v", s.Paused, hostA, until)
	}
	h.stepTo(until.Add(-time.Nanosecond))
	h.wantSent("b1")
	h.step(time.Nanosecond)
	h.wantSent("b1", "a1")
	if !h.sentAt[1].Equal(until) {
		t.Fatalf("sent at %v, want exactly %v", h.sentAt[1], until)
	}
	if s := h.q.Snapshot(); len(s.Paused) != 0 {
		t.Fatalf("paused %v after the instant", s.Paused)
	}

	// A later instant wins.
	h.q.Pause(hostA, until.Add(time.Second))
	h.q.Pause(hostA, until.Add(2*time.Second))
	h.offer(item("a2", h.clk.Now()))
	h.step(time.Second + 999*time.Millisecond)
	h.wantSent("b1", "a1")
	h.step(time.Millisecond)
	h.wantSent("b1", "a1", "a2")
}

func TestPauseIgnoredWithoutPauseOnThrottle(t *testing.T) {
	h := start(t, Limits{PauseOnThrottle: false, RetryBudgetPercent: -1})
	h.q.Pause(hostA, t0.Add(time.Hour))
	if sent, why := h.offer(item("a1", t0)); !sent {
		t.Fatalf("pause applied although pauseOnThrottle is false: %s", why)
	}
	if s := h.q.Snapshot(); len(s.Paused) != 0 {
		t.Fatalf("paused %v", s.Paused)
	}

	// Turning it off lifts the pauses in force.
	h2 := start(t, Limits{PauseOnThrottle: true, RetryBudgetPercent: -1})
	h2.q.Pause(hostA, t0.Add(time.Hour))
	h2.offer(item("a1", t0))
	h2.wantSent()
	h2.q.SetLimits(Limits{PauseOnThrottle: false, RetryBudgetPercent: -1})
	h2.settle()
	h2.wantSent("a1")
	if s := h2.q.Snapshot(); len(s.Paused) != 0 {
		t.Fatalf("paused %v", s.Paused)
	}
}

// While first attempts compete for dispatches, retries get at most the
// budget's share of them; when no first attempt can go, retries go.
func TestRetryBudgetShare(t *testing.T) {
	h := start(t, Limits{MaxInFlight: 1, RetryBudgetPercent: 20})
	h.q.Adopt("blocker", forever)
	// Retries are due earlier than every first attempt.
	for i, k := range []string{"r1", "r2", "r3"} {
		h.offer(retry(k, t0.Add(-time.Minute+time.Duration(i)*time.Second)))
	}
	for i, k := range keys("f", 10) {
		h.offer(item(k, t0.Add(-30*time.Second+time.Duration(i)*time.Second)))
	}
	h.settleKey("blocker")
	want := []string{"f00", "f01", "f02", "f03", "r1", "f04", "f05", "f06", "f07", "r2", "f08", "f09", "r3"}
	for i, k := range want {
		h.wantSent(want[:i+1]...)
		h.release(k)
	}
	h.wantSnapshot(0, 0)
	h.wantBudgetCount()
}

// wantBudgetCount checks the running count of retries in the window.
func (h *harness) wantBudgetCount() {
	h.t.Helper()
	h.q.mu.Lock()
	defer h.q.mu.Unlock()
	n := 0
	for _, r := range h.q.recent {
		if r.retry {
			n++
		}
	}
	if n != h.q.retries {
		h.t.Fatalf("%d retries counted, %d in the window", h.q.retries, n)
	}
}

// Retries held by the budget flow again, in readyAt order, once older retries
// leave the window.
func TestRetryBudgetWindowMoves(t *testing.T) {
	h := start(t, Limits{MaxInFlight: 1, RetryBudgetPercent: 20})
	// Only retries: nothing competes, so they go.
	h.offer(retry("r1", t0))
	h.release("r1")
	h.offer(retry("r2", t0))
	h.release("r2")
	h.wantSent("r1", "r2")

	h.stepTo(t0.Add(5 * time.Second))
	h.q.Adopt("blocker", forever)
	h.offer(retry("r3", t0.Add(4*time.Second)))
	for _, k := range keys("f", 6) {
		h.offer(item(k, t0.Add(5*time.Second)))
	}
	h.settleKey("blocker")
	for _, k := range []string{"f00", "f01", "f02", "f03"} {
		h.release(k)
	}
	h.wantSent("r1", "r2", "f00", "f01", "f02", "f03", "f04")
	// r1 and r2 are still in the window: r3 keeps waiting behind f05.
	h.stepTo(t0.Add(BudgetWindow - time.Nanosecond))
	h.release("f04")
	h.wantSent("r1", "r2", "f00", "f01", "f02", "f03", "f04", "f05")
	// They leave it: r3 goes before the first attempt still waiting.
	h.step(time.Nanosecond)
	h.wantSent("r1", "r2", "f00", "f01", "f02", "f03", "f04", "f05")
	h.q.Adopt("blocker", forever) // keep f05's slot taken after its release
	h.release("f05")
	h.offer(item("f06", h.clk.Now()))
	h.settleKey("blocker")
	h.wantSent("r1", "r2", "f00", "f01", "f02", "f03", "f04", "f05", "r3")
	h.release("r3")
	h.wantSent("r1", "r2", "f00", "f01", "f02", "f03", "f04", "f05", "r3", "f06")
	h.wantBudgetCount()
	h.step(BudgetWindow)
	h.offer(item("f07", h.clk.Now()))
	h.wantBudgetCount()
}

// Regression: with a budget and no first attempts in the window, retries
// waited forever (every one would end DeadlineExhausted).
func TestRetryBudgetNeverStarvesRetries(t *testing.T) {
	for _, pct := range []int{0, 20} {
		h := start(t, Limits{RetryBudgetPercent: pct})
		for _, k := range []string{"r1", "r2", "r3"} {
			h.offer(retry(k, t0))
		}
		h.wantSent("r1", "r2", "r3")
		h.step(time.Minute)
		h.offer(retry("r4", h.clk.Now()))
		h.wantSent("r1", "r2", "r3", "r4")
	}
}

func TestDeadlinePassesWhileWaiting(t *testing.T) {
	h := start(t, Limits{MaxInFlight: 1, PauseOnThrottle: true, RetryBudgetPercent: -1})
	h.q.Pause(hostA, t0.Add(10*time.Second))
	paused := item("paused", t0)
	paused.Deadline = t0.Add(5 * time.Second)
	h.offer(paused)
	// Held by maxInFlight: no timer but the deadline's.
	b := item("full", t0)
	b.Host, b.Deadline = hostB, t0.Add(7*time.Second)
	h.q.Adopt("blocker", forever)
	h.offer(b)
	h.stepTo(paused.Deadline.Add(-time.Nanosecond))
	if e := h.expiredKeys(); len(e) != 0 {
		t.Fatalf("expired %v before the deadline", e)
	}
	h.step(time.Nanosecond)
	if e := h.expiredKeys(); !slices.Equal(e, []string{"paused"}) {
		t.Fatalf("expired %v at the deadline, want [paused]", e)
	}
	h.stepTo(b.Deadline)
	if e := h.expiredKeys(); !slices.Equal(e, []string{"paused", "full"}) {
		t.Fatalf("expired %v, want [paused full]", e)
	}
	h.settleKey("blocker")
	h.stepTo(t0.Add(time.Minute))
	h.wantSent()
	h.wantSnapshot(0, 0)
}

// Regression: Offer dispatched an item whose deadline had passed (I2).
func TestOfferAtOrAfterDeadlineNeverDispatches(t *testing.T) {
	h := start(t, Limits{RetryBudgetPercent: -1})
	for _, d := range []time.Duration{0, -time.Second} {
		it := item(fmt.Sprintf("late%d", -d/time.Second), t0.Add(-time.Minute))
		it.Deadline = t0.Add(d)
		sent, why := h.offer(it)
		if sent || !strings.Contains(why, "deadline") {
			t.Fatalf("offer past deadline = %v %q", sent, why)
		}
	}
	h.wantSent()
	if e := h.expiredKeys(); !slices.Equal(e, []string{"late0", "late1"}) {
		t.Fatalf("expired %v", e)
	}
}

func TestAdoptCountsUntilSettle(t *testing.T) {
	h := start(t, Limits{MaxInFlight: 2, RetryBudgetPercent: -1})
	h.q.Adopt("x", forever)
	h.q.Adopt("y", forever)
	if sent, why := h.offer(item("a", t0)); sent || !strings.Contains(why, "maxInFlight") {
		t.Fatalf("offer with adopted slots full = %v %q", sent, why)
	}
	h.wantSnapshot(2, 1)
	h.settleKey("nobody") // no slot: nothing changes
	h.wantSent()
	h.settleKey("x")
	h.wantSent("a")
	h.wantSnapshot(2, 0)
	// An adopted attempt is in flight: it is not dispatched again.
	if sent, _ := h.offer(item("y", t0)); sent {
		t.Fatalf("an adopted key was dispatched again")
	}
	h.wantSnapshot(2, 0)
	// Adopting a waiting key drops it from the queue.
	h.offer(item("w", t0))
	h.wantSnapshot(2, 1)
	h.q.Adopt("w", forever)
	h.wantSnapshot(3, 0)
	h.settleKey("y")
	h.settleKey("w")
	h.wantSent("a")
	h.wantSnapshot(1, 0)
}

// I3: an Offer for a key in flight never dispatches it twice.
func TestOfferOfKeyInFlightDoesNotDispatchTwice(t *testing.T) {
	h := start(t, Limits{RetryBudgetPercent: -1})
	if sent, _ := h.offer(item("k", t0)); !sent {
		t.Fatalf("first offer waits")
	}
	for range 3 {
		if sent, why := h.offer(item("k", t0)); sent || !strings.Contains(why, "in flight") {
			t.Fatalf("offer of a key in flight = %v %q", sent, why)
		}
	}
	h.wantSent("k")
	h.wantSnapshot(1, 0)
	h.release("k")
	if sent, _ := h.offer(retry("k", t0)); !sent {
		t.Fatalf("the next attempt waits after the release")
	}
	h.wantSent("k", "k")
}

// I3: refreshing a waiting item never moves its ReadyAt earlier, nor
// duplicates it.
func TestRefreshNeverMovesReadyAtEarlier(t *testing.T) {
	h := start(t, Limits{RetryBudgetPercent: -1})
	h.offer(item("k", t0.Add(5*time.Second)))
	h.offer(item("k", t0.Add(time.Second))) // a stale event
	h.wantSnapshot(0, 1)
	h.stepTo(t0.Add(5*time.Second - time.Nanosecond))
	h.wantSent()
	h.offer(item("k", t0.Add(7*time.Second))) // a later one wins
	h.stepTo(t0.Add(7*time.Second - time.Nanosecond))
	h.wantSent()
	h.step(time.Nanosecond)
	h.wantSent("k")
	if p := h.sent[0].Payload; p != "payload-k" {
		t.Fatalf("payload %v", p)
	}
}

// Regression: Offer handed dispatch the slice slot after removing the item
// from it: a zero Item (or the next waiting one), and the offered key's slot
// was never released.
func TestOfferDispatchesTheOfferedItem(t *testing.T) {
	h := start(t, Limits{MaxInFlight: 1, PauseOnThrottle: true, RetryBudgetPercent: -1})
	h.q.Pause(hostB, t0.Add(time.Hour))
	later := item("later", t0)
	later.Host = hostB
	h.offer(later)
	if sent, _ := h.offer(item("a", t0.Add(-time.Second))); !sent {
		t.Fatalf("offer waits")
	}
	h.wantSent("a")
	if it := h.sent[0]; it.Payload != "payload-a" || it.Host != hostA {
		t.Fatalf("dispatched %+v", it)
	}
	h.release("a")
	h.wantSnapshot(0, 1)
}

func TestDispatchFalseReleasesSlot(t *testing.T) {
	h := start(t, Limits{MaxInFlight: 1, RetryBudgetPercent: -1})
	h.refuse["bad"] = true
	h.offer(item("bad", t0))
	h.wantSnapshot(0, 0)
	if sent, _ := h.offer(item("good", t0)); !sent {
		t.Fatalf("the slot of an item that could not start was kept")
	}
	h.wantSent("good")
	// Through the pump too.
	h.mu.Lock()
	h.refuse["bad2"] = true
	h.mu.Unlock()
	h.offer(item("bad2", t0))
	h.offer(item("next", t0))
	h.release("good")
	h.wantSent("good", "next")
	h.wantSnapshot(1, 0)
}

// Regression: Settle freed a slot held by a dispatch (the controller settles
// any task without an active attempt, which includes one just admitted and
// not yet claimed), so the queue went above maxInFlight.
func TestSettleLeavesDispatchedSlot(t *testing.T) {
	h := start(t, Limits{MaxInFlight: 1, RetryBudgetPercent: -1})
	h.offer(item("k", t0))
	h.offer(item("o", t0))
	h.settleKey("k")
	h.wantSent("k")
	h.wantSnapshot(1, 1)
	h.release("k")
	h.wantSent("k", "o")
	if h.peak != 1 {
		t.Fatalf("peak %d", h.peak)
	}
}

func TestWithdraw(t *testing.T) {
	h := start(t, Limits{MaxInFlight: 1, RetryBudgetPercent: -1})
	h.q.Adopt("blocker", forever)
	h.offer(item("a", t0))
	h.offer(item("b", t0))
	h.q.Withdraw("a")
	h.q.Withdraw("nobody")
	h.wantSnapshot(1, 1)
	h.settleKey("blocker")
	h.wantSent("b")
	h.release("b")
	h.wantSent("b")
}

// I6: one queue's limits, pauses and backlog never hold another's tasks.
func TestQueuesAreIndependent(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	busy := startOn(t, clk, Limits{MaxInFlight: 1, Rate: 1, Burst: 1, PauseOnThrottle: true, RetryBudgetPercent: 0})
	free := startOn(t, clk, Limits{MaxInFlight: 3, PauseOnThrottle: true, RetryBudgetPercent: 20})
	busy.q.Adopt("blocker", forever)
	busy.q.Pause(hostA, t0.Add(time.Hour))
	for _, k := range keys("batch", 100) {
		busy.offer(retry(k, t0.Add(-time.Hour)))
	}
	busy.settle()
	for _, k := range []string{"i1", "i2", "i3"} {
		if sent, why := free.offer(retry(k, t0)); !sent {
			t.Fatalf("interactive %s waits: %s", k, why)
		}
	}
	if s := free.q.Snapshot(); s.InFlight != 3 || s.Waiting != 0 || len(s.Paused) != 0 {
		t.Fatalf("interactive queue %+v", s)
	}
	free.q.Pause(hostB, t0.Add(time.Hour))
	busy.wantSnapshot(1, 100)
	if s := busy.q.Snapshot(); len(s.Paused) != 1 {
		t.Fatalf("batch queue paused %v", s.Paused)
	}
	busy.wantSent()
}

func TestSnapshotCounts(t *testing.T) {
	h := start(t, Limits{MaxInFlight: 2, PauseOnThrottle: true, RetryBudgetPercent: -1})
	s := h.wantSnapshot(0, 0)
	if s.Paused == nil || len(s.Paused) != 0 {
		t.Fatalf("paused %#v, want empty", s.Paused)
	}
	h.q.Adopt("x", forever)
	h.offer(item("a", t0))
	h.offer(item("b", t0))
	h.offer(item("c", t0.Add(time.Minute)))
	h.q.Pause(hostB, t0.Add(time.Second))
	h.q.Pause("c.example.com", t0.Add(2*time.Second))
	s = h.wantSnapshot(2, 2)
	if len(s.Paused) != 2 || !s.Paused[hostB].Equal(t0.Add(time.Second)) {
		t.Fatalf("paused %v", s.Paused)
	}
	h.step(time.Second)
	if s := h.q.Snapshot(); len(s.Paused) != 1 {
		t.Fatalf("paused %v after %s's pause ended", s.Paused, hostB)
	}
}

// Raising limits takes effect at once; an unchanged rate keeps the bucket's
// level: no refill, no reset, on every sync.
func TestSetLimits(t *testing.T) {
	l := Limits{MaxInFlight: 1, Rate: 1, Burst: 5, RetryBudgetPercent: -1}
	h := start(t, l)
	for _, k := range keys("t", 5) {
		h.offer(item(k, t0))
	}
	h.step(3 * time.Second) // three tokens; one slot
	h.wantSent("t00")
	l.MaxInFlight = 3
	h.q.SetLimits(l)
	h.settle()
	h.wantSent("t00", "t01", "t02")
	h.release("t00")
	h.q.SetLimits(l)
	h.settle()
	h.wantSent("t00", "t01", "t02")
	h.step(time.Second)
	h.wantSent("t00", "t01", "t02", "t03")
	h.release("t01")
	h.q.SetLimits(Limits{MaxInFlight: 3, RetryBudgetPercent: -1}) // no rate limit
	h.settle()
	h.wantSent("t00", "t01", "t02", "t03", "t04")
}

// Regression: with no retry budget, the dispatch records were never pruned and
// grew with every dispatch.
func TestDispatchRecordsStayInWindow(t *testing.T) {
	for _, pct := range []int{-1, 20} {
		h := start(t, Limits{RetryBudgetPercent: pct})
		for i := range 100 {
			k := fmt.Sprintf("k%03d", i)
			h.offer(item(k, h.clk.Now()))
			h.release(k)
			h.step(time.Second)
		}
		h.q.mu.Lock()
		n := len(h.q.recent)
		h.q.mu.Unlock()
		if n > int(BudgetWindow/time.Second)+1 {
			t.Fatalf("budget %d: %d dispatch records kept, want only the window's", pct, n)
		}
	}
}

// BenchmarkOffer refreshes items in a queue holding 1,000 waiting items.
func BenchmarkOffer(b *testing.B) {
	for _, bc := range []struct {
		name  string
		setup func(q *Queue)
	}{
		// The bucket is empty: the scan stops at the first item.
		{"rate-limited", func(q *Queue) {}},
		// Every item's host is paused: the scan passes all 1,000.
		{"host-paused", func(q *Queue) { q.Pause(hostA, t0.Add(time.Hour)) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			clk := clocktesting.NewFakeClock(t0)
			q := New(Limits{MaxInFlight: 100, Rate: 1, Burst: 1, PauseOnThrottle: true, RetryBudgetPercent: 20}, clk)
			bc.setup(q)
			dispatch := func(Item, func()) bool { b.Fatal("nothing is dispatched"); return false }
			its := make([]Item, 1000)
			for i := range its {
				its[i] = item(fmt.Sprintf("task-%04d", i), t0.Add(-time.Duration(i)*time.Millisecond))
				its[i].Retry = i%3 == 0
				q.Offer(its[i], dispatch)
			}
			if s := q.Snapshot(); s.Waiting != 1000 {
				b.Fatalf("waiting %d", s.Waiting)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				q.Offer(its[(i*7919)%len(its)], dispatch)
			}
		})
	}
}

// forever is an adoption that only Settle ends.
var forever = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// An adopted slot frees itself at its lease, so a task deleted before its
// result is seen cannot hold the queue forever.
func TestAdoptedSlotExpiresAtItsLease(t *testing.T) {
	h := start(t, Limits{MaxInFlight: 1, RetryBudgetPercent: -1})
	h.q.Adopt("gone", t0.Add(5*time.Second))
	if sent, _ := h.offer(item("a", t0)); sent {
		t.Fatal("sent while the adopted slot is held")
	}
	h.stepTo(t0.Add(5*time.Second - time.Nanosecond))
	h.wantSent()
	h.stepTo(t0.Add(5 * time.Second))
	h.wantSent("a")
}

// The send-side gate paces sends at the queue's rate whatever the claims'
// timing: after a burst, the next send waits for a token.
func TestGatePacesSends(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := New(Limits{Rate: 2, Burst: 1, RetryBudgetPercent: -1}, clk)
	clk.Step(time.Second) // the bucket (one token) fills
	if !q.Gate(context.Background(), time.Time{}) {
		t.Fatal("the first send was refused")
	}
	done := make(chan bool)
	go func() { done <- q.Gate(context.Background(), time.Time{}) }()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("a second send passed the gate with no token")
	default:
	}
	clk.Step(500*time.Millisecond - time.Nanosecond)
	select {
	case <-done:
		t.Fatal("the gate opened before the next token")
	case <-time.After(20 * time.Millisecond):
	}
	clk.Step(time.Nanosecond)
	if !<-done {
		t.Fatal("the gate never opened")
	}
}

// A token that would come too late (after the lease or the deadline allow a
// send) is not waited for, and not taken.
func TestGateRefusesATokenPastLatest(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := New(Limits{Rate: 1, Burst: 1, RetryBudgetPercent: -1}, clk)
	if q.Gate(context.Background(), t0.Add(500*time.Millisecond)) {
		t.Fatal("passed with the next token 1s away and latest 500ms away")
	}
	clk.Step(time.Second)
	if !q.Gate(context.Background(), t0.Add(time.Second)) {
		t.Fatal("the refused wait took the token")
	}
}
