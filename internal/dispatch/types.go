// Package dispatch is the only code that opens connections. It builds the HTTP
// request from a task's spec (secrets resolved at send time, never stored), sends
// it, and classifies what happened. It never decides about retries.
package dispatch

import (
	"net/http"
	"time"

	"github.com/retry-operator/retry-operator/internal/planner"
)

// Request is one fully resolved HTTP request.
type Request struct {
	Method  string
	URL     string
	Header  http.Header
	Body    []byte
	Timeout time.Duration
}

// Result is what one send produced.
type Result struct {
	// Outcome is Response (a status line arrived), NotSent (failed before any
	// request byte was written) or Unknown (written, then no status line).
	Outcome    planner.OutcomeKind
	StatusCode int
	// Header holds the response headers (Response only).
	Header http.Header
	// Body is read for 2xx only, up to the limit given to Send.
	Body []byte
	// BodyTooLarge is set when a 2xx body was longer than the limit.
	BodyTooLarge bool
	// BodyErr is set when a 2xx body could not be read completely.
	BodyErr error
	// Err describes a transport failure (NotSent, Unknown); it names no secret.
	Err error
	// ReceivedAt is when the status line arrived, or when the failure was seen.
	ReceivedAt time.Time
	// SentAt is when the send began; zero when nothing was sent.
	SentAt time.Time
}
