package planner

import (
	"testing"
	"time"
)

func TestClaim(t *testing.T) {
	deadline := now.Add(10 * time.Minute)
	tests := map[string]struct {
		s     State
		now   time.Time
		want  ClaimResult
		after State // the state Claim returns
	}{
		"first attempt": {
			s: State{Deadline: deadline}, now: now, want: Claimed,
			after: State{Attempts: 1, ActiveAttempt: 1, Deadline: deadline},
		},
		"retry at readyAt exactly": {
			s: State{Attempts: 1, Deadline: deadline, ReadyAt: now}, now: now, want: Claimed,
			after: State{Attempts: 2, ActiveAttempt: 2, Deadline: deadline},
		},
		"retry after readyAt": {
			s: State{Attempts: 2, Deadline: deadline, ReadyAt: now}, now: now.Add(time.Second), want: Claimed,
			after: State{Attempts: 3, ActiveAttempt: 3, Deadline: deadline},
		},
		"before readyAt is not due": {
			s: State{Attempts: 1, Deadline: deadline, ReadyAt: now.Add(time.Microsecond)}, now: now, want: NotDue,
		},
		"an attempt in flight is busy": {
			s: State{Attempts: 1, ActiveAttempt: 1, Deadline: deadline}, now: now, want: Busy,
		},
		"at the deadline it has passed": {
			s: State{Attempts: 1, Deadline: deadline}, now: deadline, want: DeadlinePassed,
		},
		"attempts used up": {
			s: State{Attempts: 3, Deadline: deadline}, now: now, want: BudgetSpent,
		},
		// Order: busy first (never touch an in-flight attempt), then the deadline,
		// then the budget, then readyAt.
		"busy wins over everything": {
			s: State{Attempts: 3, ActiveAttempt: 3, Deadline: now, ReadyAt: now.Add(time.Hour)}, now: now, want: Busy,
		},
		"deadline wins over budget and readyAt": {
			s: State{Attempts: 3, Deadline: now, ReadyAt: now.Add(time.Hour)}, now: now, want: DeadlinePassed,
		},
		"budget wins over readyAt": {
			s: State{Attempts: 3, Deadline: deadline, ReadyAt: now.Add(time.Hour)}, now: now, want: BudgetSpent,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, res := Claim(tc.s, 3, tc.now)
			if res != tc.want {
				t.Fatalf("Claim = %s, want %s", res, tc.want)
			}
			want := tc.after
			if res != Claimed {
				want = tc.s // unchanged
			}
			if got != want {
				t.Errorf("state = %+v, want %+v", got, want)
			}
		})
	}
}

// TestRequeueDoesNotRaiseConcurrency: however often the same task is re-queued or
// seen by several workers, only one claim succeeds until the attempt is recorded.
func TestRequeueDoesNotRaiseConcurrency(t *testing.T) {
	s := State{Attempts: 1, Deadline: now.Add(time.Minute), ReadyAt: now}
	s, res := Claim(s, 3, now)
	if res != Claimed {
		t.Fatalf("first claim = %s", res)
	}
	claimed := s
	for i := range 5 {
		var r ClaimResult
		if s, r = Claim(s, 3, now.Add(time.Duration(i)*time.Second)); r != Busy {
			t.Fatalf("re-queue %d = %s, want Busy", i, r)
		}
	}
	if s != claimed || s.ActiveAttempt != 2 || s.Attempts != 2 {
		t.Errorf("state after re-queues = %+v, want %+v", s, claimed)
	}
}
