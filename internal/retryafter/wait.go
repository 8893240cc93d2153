package retryafter

import "time"

// Wait is how long the server asked the client to wait, measured from now, the
// local time the response was received. It is never negative: a date in the past
// is a valid zero wait. Missing and Invalid values have no server wait (0); the
// planner decides what they mean.
//
// For an HTTP-date, dateLines are the response's Date header lines. When exactly one
// is present and valid, the wait is the larger of Date-now and Date-serverDate, so
// a local clock that runs ahead of the server's cannot make the send early. An
// absent, repeated or broken Date header is ignored rather than trusted.
func (v Value) Wait(now time.Time, dateLines []string) time.Duration {
	switch v.Source {
	case DeltaSeconds:
		// Clamped again so a Value built by hand cannot overflow the Duration.
		return time.Duration(min(max(v.Seconds, 0), MaxSeconds)) * time.Second
	case HTTPDate:
		wait := v.Date.Sub(now) // Sub saturates instead of overflowing.
		if len(dateLines) == 1 {
			if server, ok := ParseHTTPDate(dateLines[0], now); ok {
				wait = max(wait, v.Date.Sub(server))
			}
		}
		return max(wait, 0)
	default:
		return 0
	}
}
