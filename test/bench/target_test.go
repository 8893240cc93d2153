package bench

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// target is the rate-limited API the tasks call: on loopback, each path's first
// request gets 429 `Retry-After: 1`, every later one 200. It logs arrival and
// reply times per path; lateness and early arrivals are measured from this log,
// i.e. from what the server saw, not from what the operator says it did.
type target struct {
	*httptest.Server
	mu    sync.Mutex
	paths map[string]*pathLog
}

type pathLog struct {
	arrivals []time.Time // when each request's handler started
	replied  time.Time   // when the 429 was written (first request only)
}

func newTarget() *target {
	t := &target{paths: map[string]*pathLog{}}
	t.Server = httptest.NewServer(http.HandlerFunc(t.serve))
	return t
}

func (t *target) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	t.mu.Lock()
	p := t.paths[r.URL.Path]
	if p == nil {
		p = &pathLog{}
		t.paths[r.URL.Path] = p
	}
	p.arrivals = append(p.arrivals, at)
	n := len(p.arrivals)
	t.mu.Unlock()

	if n == 1 {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		// Flush so that replied is when the 429 left, not when it was buffered:
		// the server's own "not before" is one second after that.
		w.(http.Flusher).Flush()
		t.mu.Lock()
		p.replied = time.Now()
		t.mu.Unlock()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"ok":true}`))
}

// log returns a copy of the per-path log.
func (t *target) log() map[string]pathLog {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]pathLog, len(t.paths))
	for k, v := range t.paths {
		out[k] = pathLog{arrivals: append([]time.Time(nil), v.arrivals...), replied: v.replied}
	}
	return out
}
