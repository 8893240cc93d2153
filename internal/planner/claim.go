package planner

import "time"

// Claim decides whether the task may send its next attempt now, the last check
// before any byte goes out; the caller persists the returned state (with optimistic
// concurrency) before sending, so a conflict means someone else claimed it (I4).
// The checks, in order: an attempt in flight (Busy, I3), the deadline
// (DeadlinePassed) and the attempt budget (BudgetSpent), both re-checked here
// because time has passed since Plan (I2), and readyAt (NotDue, I1). On Claimed
// the attempt is counted, marked active, and the consumed readyAt cleared.
// Otherwise the state is returned unchanged.
func Claim(s State, maxAttempts int, now time.Time) (State, ClaimResult) {
	switch {
	case s.ActiveAttempt != 0:
		return s, Busy
	case !now.Before(s.Deadline):
		return s, DeadlinePassed
	case s.Attempts >= maxAttempts:
		return s, BudgetSpent
	case now.Before(s.ReadyAt):
		return s, NotDue
	}
	s.Attempts++
	s.ActiveAttempt = s.Attempts
	s.ReadyAt = time.Time{}
	return s, Claimed
}
