package retryafter

import (
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	at := func(s string) Value { return Parse([]string{s}, now) }
	tests := map[string]struct {
		v     Value
		now   time.Time
		dates []string
		want  time.Duration
	}{
		"delta seconds":        {v: at("120"), now: now, want: 120 * time.Second},
		"delta zero":           {v: at("0"), now: now, want: 0},
		"delta saturated":      {v: at("999999999999999999999"), now: now, want: time.Duration(MaxSeconds) * time.Second},
		"delta ignores Date":   {v: at("10"), now: now, dates: []string{"Mon, 30 Nov 2026 09:00:00 GMT"}, want: 10 * time.Second},
		"hand-built negative":  {v: Value{Source: DeltaSeconds, Seconds: -5}, now: now, want: 0},
		"hand-built overlarge": {v: Value{Source: DeltaSeconds, Seconds: 1 << 62}, now: now, want: time.Duration(MaxSeconds) * time.Second},

		"date ahead, no Date header": {v: at("Mon, 30 Nov 2026 10:00:30 GMT"), now: now, want: 30 * time.Second},
		"past date is a zero wait":   {v: at("Sun, 06 Nov 1994 08:49:37 GMT"), now: now, want: 0},
		"date equal to now":          {v: at("Mon, 30 Nov 2026 10:00:00 GMT"), now: now, want: 0},

		// Date-header skew: the local clock runs 10s ahead of the server's. RA-now
		// alone would give 20s and send 10s early by the server's clock.
		"local clock ahead uses the server Date": {
			v: at("Mon, 30 Nov 2026 10:00:30 GMT"), now: now.Add(20 * time.Second),
			dates: []string{"Mon, 30 Nov 2026 10:00:10 GMT"}, want: 20 * time.Second,
		},
		// Local clock behind the server: RA-now is the larger, and it is kept.
		"local clock behind keeps RA-now": {
			v: at("Mon, 30 Nov 2026 10:00:30 GMT"), now: now,
			dates: []string{"Mon, 30 Nov 2026 10:00:10 GMT"}, want: 30 * time.Second,
		},
		"past RA with skew is still never negative": {
			v: at("Mon, 30 Nov 2026 09:00:00 GMT"), now: now,
			dates: []string{"Mon, 30 Nov 2026 08:00:00 GMT"}, want: time.Hour,
		},
		"Date in RFC 850 format counts": {
			v: at("Mon, 30 Nov 2026 10:00:30 GMT"), now: now.Add(20 * time.Second),
			dates: []string{"Monday, 30-Nov-26 10:00:10 GMT"}, want: 20 * time.Second,
		},
		"invalid Date header is ignored": {
			v: at("Mon, 30 Nov 2026 10:00:30 GMT"), now: now.Add(20 * time.Second),
			dates: []string{"Mon, 30 Nov 2026 10:00:10 UTC"}, want: 10 * time.Second,
		},
		"two Date headers are ignored": {
			v: at("Mon, 30 Nov 2026 10:00:30 GMT"), now: now.Add(20 * time.Second),
			dates: []string{"Mon, 30 Nov 2026 10:00:10 GMT", "Mon, 30 Nov 2026 10:00:10 GMT"}, want: 10 * time.Second,
		},

		"missing has no server wait": {v: Parse(nil, now), now: now, want: 0},
		"invalid has no server wait": {v: at("soon"), now: now, want: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.v.Wait(tc.now, tc.dates); got != tc.want {
				t.Errorf("%+v.Wait(%v, %q) = %v, want %v", tc.v, tc.now, tc.dates, got, tc.want)
			}
		})
	}
}
