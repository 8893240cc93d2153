// Package demoapi is the rate-limited HTTP API that `make demo` runs on
// loopback. Like a real LLM or payment API it answers 429 Too Many Requests
// with a Retry-After header (in seconds or as an HTTP-date) a few times before
// it answers 200, and it deduplicates on the Idempotency-Key header. It also
// checks that nobody comes back before the wait it asked for.
package demoapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A throttle is one 429 answer: how long the client must wait, and whether
// the wait is sent as an HTTP-date rather than a number of seconds.
type throttle struct {
	wait     time.Duration
	httpDate bool
}

// endpoint is the script of one path: the 429s its first requests get (the
// last one repeats forever when forever is set), then 200 with body.
type endpoint struct {
	method    string // "" accepts any method
	needsAuth bool
	throttles []throttle
	forever   bool
	body      string
}

// endpoints are the paths the samples in config/samples call. Any other path
// gets fallback, so a task a user writes shows the same behaviour.
var endpoints = map[string]endpoint{
	"/v1/models": {
		method:    http.MethodGet,
		throttles: []throttle{{wait: 3 * time.Second}},
		body:      `{"object":"list","data":[{"id":"demo-small"},{"id":"demo-embed"}]}`,
	},
	"/v1/chat/completions": {
		method:    http.MethodPost,
		needsAuth: true,
		throttles: []throttle{{wait: 4 * time.Second, httpDate: true}},
		body:      `{"object":"chat.completion","model":"demo-small","choices":[{"index":0,"message":{"role":"assistant","content":"Document 42 in one line: retries that wait as long as the server asks."}}]}`,
	},
	"/v1/embeddings": {
		method:    http.MethodPost,
		needsAuth: true,
		throttles: []throttle{{wait: 2 * time.Second}, {wait: 3 * time.Second, httpDate: true}},
		body:      `{"object":"list","model":"demo-embed","data":[{"index":0,"embedding":[0.12,-0.5,0.33]}]}`,
	},
	"/v1/reports/nightly": {
		// The quota is gone for an hour: more than any sample accepts to wait.
		method:    http.MethodGet,
		throttles: []throttle{{wait: time.Hour}},
		forever:   true,
	},
}

var fallback = endpoint{throttles: []throttle{{wait: 3 * time.Second}}}

// Entry is one request as the server saw it, for the demo's output.
type Entry struct {
	At         time.Time
	Method     string
	Path       string
	Status     int
	RetryAfter string
	Replayed   bool
	// Early is how much sooner than the announced Retry-After the request came
	// (0 when it was on time or there was no earlier 429); Late how much later.
	Early, Late time.Duration
	// Waited is set when an earlier 429 announced a wait for this request.
	Waited bool
}

func (e Entry) String() string {
	s := fmt.Sprintf("%s  %-4s %-22s -> %d", e.At.Format("15:04:05.000"), e.Method, e.Path, e.Status)
	switch {
	case e.RetryAfter != "":
		s += "  Retry-After: " + e.RetryAfter
	case e.Replayed:
		s += "  (Idempotency-Key seen before: stored response replayed)"
	}
	switch {
	case e.Early > 0:
		s += fmt.Sprintf("  EARLY by %.3fs: the client did not honour Retry-After", e.Early.Seconds())
	case e.Waited:
		s += fmt.Sprintf("  (%.3fs after the wait ended)", e.Late.Seconds())
	}
	return s
}

// state is what the server remembers for one path and idempotency key.
type state struct {
	seen      int
	notBefore time.Time // announced by the last 429; zero if none
	done      bool      // a 200 was sent for this idempotency key
}

// Server is the demo API. Create it with New.
type Server struct {
	// Log, if set, receives every request after it is answered.
	Log func(Entry)

	now   func() time.Time
	mu    sync.Mutex
	state map[string]*state
	reqs  int
	early int
}

// New returns a Server that reads the wall clock.
func New() *Server {
	return &Server{now: time.Now, state: map[string]*state{}}
}

// Stats returns the number of requests served and how many came early.
func (s *Server) Stats() (requests, early int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs, s.early
}

// ServeHTTP answers one request from the path's script.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ep, ok := endpoints[r.URL.Path]
	if !ok {
		ep = fallback
	}
	s.mu.Lock()
	now := s.now()
	s.reqs++
	e := Entry{At: now, Method: r.Method, Path: r.URL.Path}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", fmt.Sprintf("req_demo_%04d", s.reqs))

	switch {
	case ep.method != "" && r.Method != ep.method:
		e.Status = http.StatusMethodNotAllowed
	case ep.needsAuth && !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer "):
		e.Status = http.StatusUnauthorized
	default:
		key := r.Method + " " + r.URL.Path + " " + r.Header.Get("Idempotency-Key")
		st := s.state[key]
		if st == nil {
			st = &state{}
			s.state[key] = st
		}
		if !st.notBefore.IsZero() {
			e.Waited = true
			if d := st.notBefore.Sub(now); d > 0 {
				e.Early = d
				s.early++
			} else {
				e.Late = -d
			}
		}
		answer(w, now, ep, st, r.Header.Get("Idempotency-Key") != "", &e)
	}
	s.mu.Unlock()

	w.WriteHeader(e.Status)
	switch {
	case e.Status == http.StatusOK:
		fmt.Fprintln(w, bodyOf(ep, r.URL.Path))
	default:
		fmt.Fprintf(w, "{\"error\":%q}\n", http.StatusText(e.Status))
	}
	if s.Log != nil {
		s.Log(e)
	}
}

// answer picks the status from the script and sets the headers.
func answer(w http.ResponseWriter, now time.Time, ep endpoint, st *state, keyed bool, e *Entry) {
	if st.done && keyed {
		// The call already succeeded: a resend with the same key gets the
		// stored response, and nothing is done twice.
		w.Header().Set("Idempotent-Replayed", "true")
		e.Status, e.Replayed = http.StatusOK, true
		return
	}
	i := st.seen
	st.seen++
	if i >= len(ep.throttles) && ep.forever {
		i = len(ep.throttles) - 1
	}
	if i >= len(ep.throttles) || st.done {
		st.done, st.notBefore = true, time.Time{}
		e.Status = http.StatusOK
		return
	}
	t := ep.throttles[i]
	st.notBefore = now.Add(t.wait)
	e.RetryAfter = strconv.Itoa(int(t.wait / time.Second))
	if t.httpDate {
		// An HTTP-date has whole seconds: round up so the wait is not shortened.
		at := now.Add(t.wait)
		if at.Truncate(time.Second) != at {
			at = at.Truncate(time.Second).Add(time.Second)
		}
		st.notBefore = at
		e.RetryAfter = at.UTC().Format(http.TimeFormat)
	}
	w.Header().Set("Retry-After", e.RetryAfter)
	e.Status = http.StatusTooManyRequests
}

func bodyOf(ep endpoint, path string) string {
	if ep.body != "" {
		return ep.body
	}
	return fmt.Sprintf(`{"ok":true,"path":%q}`, path)
}
