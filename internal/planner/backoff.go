package planner

import "time"

// Backoff is the local wait before the retry that follows attempt number attempt,
// used when the server named no wait (a missing Retry-After, or NotSent). It is
// exponential with full jitter: uniform in [0, cap) with
// cap = min(InitialDelay * 2^(attempt-1), MaxDelay, maxWait), so ten clients that
// failed together do not come back together. Doubling saturates instead of
// overflowing. A nil rnd returns cap itself: no jitter is still never early.
func Backoff(attempt int, f Fallback, maxWait time.Duration, rnd Rand) time.Duration {
	c := backoffCap(attempt, f, maxWait)
	if c == 0 || rnd == nil {
		return c
	}
	return time.Duration(rnd.Int64N(int64(c)))
}

func backoffCap(attempt int, f Fallback, maxWait time.Duration) time.Duration {
	limit := min(f.MaxDelay, maxWait)
	if limit <= 0 || f.InitialDelay <= 0 {
		return 0
	}
	n := uint(max(attempt-1, 0))
	// InitialDelay << n <= limit exactly when InitialDelay <= limit >> n; checking it
	// this way round cannot overflow, and a shift of 63 or more gives 0.
	if f.InitialDelay > limit>>n {
		return limit
	}
	return f.InitialDelay << n
}
