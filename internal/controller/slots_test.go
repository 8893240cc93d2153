package controller

import (
	"context"
	"testing"
	"time"
)

// With every slot taken, a retry that comes due goes before first attempts
// that waited longer, and retries go in readyAt order.
func TestSlotsServeRetriesFirstInReadyAtOrder(t *testing.T) {
	s := newSlots(1)
	ctx := context.Background()
	if !s.acquire(ctx, false, t0) {
		t.Fatal("the free slot was not granted")
	}
	order := make(chan string, 4)
	wait := func(name string, retry bool, at time.Time) {
		go func() {
			if s.acquire(ctx, retry, at) {
				order <- name
			}
		}()
	}
	wait("first-a", false, t0)
	wait("first-b", false, t0.Add(time.Millisecond))
	wait("retry-late", true, t0.Add(2*time.Second))
	wait("retry-early", true, t0.Add(time.Second))
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		n := len(s.waiters)
		s.mu.Unlock()
		if n == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("waiters did not queue")
		}
	}
	var got []string
	for range 4 {
		s.release()
		got = append(got, <-order)
	}
	want := []string{"retry-early", "retry-late", "first-a", "first-b"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}

func TestSlotsCancelledWaiterGivesNothingAway(t *testing.T) {
	s := newSlots(1)
	s.acquire(context.Background(), false, t0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- s.acquire(ctx, true, t0) }()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if <-done {
		t.Fatal("a cancelled waiter got a slot")
	}
	s.release()
	if !s.acquire(context.Background(), false, t0) {
		t.Fatal("the released slot was lost")
	}
}
