package planner

import "time"

// CeilMicro rounds t up to a whole microsecond, the precision readyAt is stored
// with: truncating would move a wait earlier.
func CeilMicro(t time.Time) time.Time { return ceilMicro(t) }
