package demoapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func do(t *testing.T, s *Server, method, path, key string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer x")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	return w.Result()
}

func TestScript(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 250_000_000, time.UTC)
	s := New()
	s.now = func() time.Time { return now }
	var log []Entry
	s.Log = func(e Entry) { log = append(log, e) }

	// Seconds: 429 then, after the wait, 200.
	if r := do(t, s, "GET", "/v1/models", ""); r.StatusCode != 429 || r.Header.Get("Retry-After") != "3" {
		t.Fatalf("first GET: %d Retry-After %q, want 429 3", r.StatusCode, r.Header.Get("Retry-After"))
	}
	now = now.Add(2 * time.Second)
	if r := do(t, s, "GET", "/v1/models", ""); r.StatusCode != 200 {
		t.Fatalf("second GET: %d, want 200", r.StatusCode)
	}
	if _, early := s.Stats(); early != 1 || log[1].Early != time.Second {
		t.Fatalf("a request 1s before the wait ended: early=%d, entry %+v", early, log[1])
	}

	// HTTP-date, rounded up to the next whole second; then a keyed replay.
	r := do(t, s, "POST", "/v1/chat/completions", "k1")
	if want := "Mon, 30 Nov 2026 10:00:07 GMT"; r.StatusCode != 429 || r.Header.Get("Retry-After") != want {
		t.Fatalf("first POST: %d Retry-After %q, want 429 %q", r.StatusCode, r.Header.Get("Retry-After"), want)
	}
	now = now.Add(5 * time.Second)
	if r := do(t, s, "POST", "/v1/chat/completions", "k1"); r.StatusCode != 200 || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("second POST: %d replayed %q, want a fresh 200", r.StatusCode, r.Header.Get("Idempotent-Replayed"))
	}
	if r := do(t, s, "POST", "/v1/chat/completions", "k1"); r.StatusCode != 200 || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("third POST: %d replayed %q, want the stored 200", r.StatusCode, r.Header.Get("Idempotent-Replayed"))
	}
	if r := do(t, s, "POST", "/v1/chat/completions", "k2"); r.StatusCode != 429 {
		t.Fatalf("a new key: %d, want 429", r.StatusCode)
	}

	// A wait nobody should accept, forever.
	for range 2 {
		if r := do(t, s, "GET", "/v1/reports/nightly", ""); r.StatusCode != 429 || r.Header.Get("Retry-After") != "3600" {
			t.Fatalf("nightly: %d Retry-After %q", r.StatusCode, r.Header.Get("Retry-After"))
		}
	}
}
