package controller

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// slots bounds the attempts sent at once across all tasks. Waiters are served
// retries first, then in readyAt order, so a retry that comes due never
// queues behind a backlog of first attempts.
type slots struct {
	mu      sync.Mutex
	free    int
	seq     uint64
	waiters waiters
}

func newSlots(n int) *slots { return &slots{free: n} }

type waiter struct {
	retry     bool
	at        time.Time
	seq       uint64
	granted   chan struct{}
	cancelled bool
}

// acquire waits for a slot; it returns false when ctx ends first.
func (s *slots) acquire(ctx context.Context, retry bool, at time.Time) bool {
	s.mu.Lock()
	if s.free > 0 && len(s.waiters) == 0 {
		s.free--
		s.mu.Unlock()
		return true
	}
	s.seq++
	w := &waiter{retry: retry, at: at, seq: s.seq, granted: make(chan struct{})}
	heap.Push(&s.waiters, w)
	s.mu.Unlock()
	select {
	case <-w.granted:
		return true
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		select {
		case <-w.granted: // granted meanwhile: hand the slot on
			s.releaseLocked()
		default:
			w.cancelled = true
		}
		return false
	}
}

func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked()
}

func (s *slots) releaseLocked() {
	for len(s.waiters) > 0 {
		w := heap.Pop(&s.waiters).(*waiter)
		if !w.cancelled {
			close(w.granted)
			return
		}
	}
	s.free++
}

// waiters is a heap: retries first, then earliest readyAt, then arrival.
type waiters []*waiter

func (h waiters) Len() int { return len(h) }
func (h waiters) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.retry != b.retry {
		return a.retry
	}
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return a.seq < b.seq
}
func (h waiters) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *waiters) Push(x any)   { *h = append(*h, x.(*waiter)) }
func (h *waiters) Pop() any {
	old := *h
	w := old[len(old)-1]
	*h = old[:len(old)-1]
	return w
}
