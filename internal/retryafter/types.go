// Package retryafter parses a Retry-After header value as RFC 9110 (sections
// 10.2.3 and 5.6.7) defines it. It is pure: no clock reads, no I/O.
package retryafter

import "time"

// Source is what kind of value a Retry-After header held.
type Source string

const (
	Missing      Source = "Missing"
	DeltaSeconds Source = "DeltaSeconds"
	HTTPDate     Source = "HTTPDate"
	Invalid      Source = "Invalid"
)

// MaxRawLen bounds the raw value kept for status; longer headers are Invalid.
const MaxRawLen = 128

// Value is a classified Retry-After header.
type Value struct {
	Source Source
	// Raw is the header as received (lines joined with ", "), cut to MaxRawLen bytes.
	Raw string
	// Seconds is the delta for DeltaSeconds, saturated at MaxSeconds.
	Seconds int64
	// Date is the instant for HTTPDate, in UTC.
	Date time.Time
}
