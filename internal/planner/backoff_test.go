package planner

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestBackoffCap(t *testing.T) {
	def := Fallback{Policy: FallbackBackoff, InitialDelay: time.Second, MaxDelay: 30 * time.Second}
	tests := map[string]struct {
		attempt int
		f       Fallback
		maxWait time.Duration
		want    time.Duration
	}{
		"attempt 1 is the initial delay": {1, def, time.Minute, time.Second},
		"attempt 2 doubles":              {2, def, time.Minute, 2 * time.Second},
		"attempt 5":                      {5, def, time.Minute, 16 * time.Second},
		"attempt 6 hits maxDelay":        {6, def, time.Minute, 30 * time.Second},
		"maxWait caps below maxDelay":    {6, def, 10 * time.Second, 10 * time.Second},
		"attempt 0 is treated as 1":      {0, def, time.Minute, time.Second},
		"negative attempt as 1":          {-5, def, time.Minute, time.Second},
		"huge attempt does not overflow": {1000, def, time.Minute, 30 * time.Second},
		"attempt 64 does not overflow":   {64, def, time.Minute, 30 * time.Second},
		"initial above max":              {1, Fallback{InitialDelay: time.Hour, MaxDelay: time.Second}, time.Minute, time.Second},
		"no initial delay":               {3, Fallback{MaxDelay: time.Second}, time.Minute, 0},
		"no max delay":                   {3, Fallback{InitialDelay: time.Second}, time.Minute, 0},
		"negative maxWait":               {1, def, -time.Second, 0},
		"largest durations": {
			62, Fallback{InitialDelay: math.MaxInt64, MaxDelay: math.MaxInt64}, math.MaxInt64, math.MaxInt64,
		},
		"doubling right up to the limit": {
			3, Fallback{InitialDelay: 1, MaxDelay: 4}, 4, 4,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			// A nil source means no jitter: the cap itself.
			if got := Backoff(tc.attempt, tc.f, tc.maxWait, nil); got != tc.want {
				t.Errorf("Backoff(%d, %+v, %v, nil) = %v, want %v", tc.attempt, tc.f, tc.maxWait, got, tc.want)
			}
		})
	}
}

// TestBackoffFullJitter: the delay is drawn uniformly from [0, cap), so clients that
// failed together spread out instead of returning in the same second.
func TestBackoffFullJitter(t *testing.T) {
	f := Fallback{Policy: FallbackBackoff, InitialDelay: time.Second, MaxDelay: 30 * time.Second}
	r := &halfRand{}
	if got := Backoff(3, f, time.Minute, r); got != 2*time.Second || r.n != int64(4*time.Second) {
		t.Errorf("Backoff = %v drawn from [0, %v), want 2s from [0, 4s)", got, time.Duration(r.n))
	}

	rnd := rand.New(rand.NewPCG(1, 2))
	seen := map[time.Duration]bool{}
	for range 1000 {
		d := Backoff(3, f, time.Minute, rnd)
		if d < 0 || d >= 4*time.Second {
			t.Fatalf("Backoff = %v, outside [0, 4s)", d)
		}
		seen[d.Truncate(time.Second)] = true
	}
	if len(seen) != 4 {
		t.Errorf("1000 draws covered %d of the four seconds in [0, 4s)", len(seen))
	}
}
