package dispatch

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/retry-operator/retry-operator/internal/planner"
)

// receivedAt is the fake clock's time: every ReceivedAt must come from the clock.
var receivedAt = time.Date(2026, 11, 30, 10, 0, 0, 123456000, time.UTC)

func newTestSender() *Sender {
	return NewSender(clocktesting.NewFakePassiveClock(receivedAt))
}

// seen records what a test server received.
type seen struct {
	mu       sync.Mutex
	requests []seenRequest
}

type seenRequest struct {
	method, path string
	header       http.Header
	body         string
	close        bool
}

func (s *seen) add(r seenRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
}

func (s *seen) all() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.requests...)
}

func (s *seen) count(path string) int {
	n := 0
	for _, r := range s.all() {
		if r.path == path {
			n++
		}
	}
	return n
}

// recording wraps a handler so that every request is recorded, body read, first.
func recording(s *seen, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.add(seenRequest{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: string(b), close: r.Close})
		h(w, r)
	})
}

func TestSendClassifiesResponses(t *testing.T) {
	cases := map[string]struct {
		handler     http.HandlerFunc
		maxBody     int64
		wantStatus  int
		wantBody    []byte // nil: no body kept
		wantTooBig  bool
		wantHeaders map[string]string
	}{
		"200 keeps the body and headers": {
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("X-Request-Id", "req_1")
				_, _ = io.WriteString(w, `{"ok":true}`)
			},
			maxBody: 1024, wantStatus: 200, wantBody: []byte(`{"ok":true}`),
			wantHeaders: map[string]string{"X-Request-Id": "req_1"},
		},
		"204 keeps an empty body": {
			handler: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) },
			maxBody: 1024, wantStatus: 204, wantBody: []byte{},
		},
		"429 returns Retry-After and Date, body not kept": {
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Retry-After", "2")
				w.Header().Set("Date", "Mon, 30 Nov 2026 10:00:00 GMT")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = io.WriteString(w, "slow down")
			},
			maxBody: 1024, wantStatus: 429,
			wantHeaders: map[string]string{"Retry-After": "2", "Date": "Mon, 30 Nov 2026 10:00:00 GMT"},
		},
		"302 is returned, not followed": {
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/elsewhere", http.StatusFound)
			},
			maxBody: 1024, wantStatus: 302,
			wantHeaders: map[string]string{"Location": "/elsewhere"},
		},
		"500 with a large body: status only": {
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = w.Write(make([]byte, 1<<20))
			},
			maxBody: 1024, wantStatus: 500,
		},
		"2xx body one byte over the limit": {
			handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "123456") },
			maxBody: 5, wantStatus: 200, wantTooBig: true,
		},
		"2xx body exactly at the limit": {
			handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "12345") },
			maxBody: 5, wantStatus: 200, wantBody: []byte("12345"),
		},
		"2xx with a zero limit and a body": {
			handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "x") },
			maxBody: 0, wantStatus: 200, wantTooBig: true,
		},
		"2xx with a negative limit: body not wanted": {
			handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(make([]byte, 1<<20)) },
			maxBody: -1, wantStatus: 200,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var s seen
			mux := http.NewServeMux()
			mux.Handle("/", recording(&s, tc.handler))
			mux.Handle("/elsewhere", recording(&s, func(http.ResponseWriter, *http.Request) {}))
			srv := httptest.NewServer(mux)
			defer srv.Close()

			res := newTestSender().Send(t.Context(), Request{Method: "GET", URL: srv.URL + "/call", Timeout: 5 * time.Second}, tc.maxBody)

			if res.Outcome != planner.Response || res.Err != nil {
				t.Fatalf("outcome %s, err %v; want Response", res.Outcome, res.Err)
			}
			if res.StatusCode != tc.wantStatus {
				t.Errorf("status %d, want %d", res.StatusCode, tc.wantStatus)
			}
			if (res.Body == nil) != (tc.wantBody == nil) || string(res.Body) != string(tc.wantBody) {
				t.Errorf("body %q (nil %t), want %q (nil %t)", res.Body, res.Body == nil, tc.wantBody, tc.wantBody == nil)
			}
			if res.BodyTooLarge != tc.wantTooBig || res.BodyErr != nil {
				t.Errorf("BodyTooLarge %t, BodyErr %v; want %t, nil", res.BodyTooLarge, res.BodyErr, tc.wantTooBig)
			}
			for k, v := range tc.wantHeaders {
				if got := res.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if !res.ReceivedAt.Equal(receivedAt) {
				t.Errorf("ReceivedAt %v, want the clock's %v", res.ReceivedAt, receivedAt)
			}
			if n := len(s.all()); n != 1 {
				t.Errorf("server saw %d requests, want 1 (redirects are not followed)", n)
			}
		})
	}
}

func TestSendWritesTheRequestOnce(t *testing.T) {
	var s seen
	srv := httptest.NewServer(recording(&s, func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Authorization", "Bearer s3cr3t")
	h.Set("Idempotency-Key", "task-42")

	res := newTestSender().Send(t.Context(), Request{Method: "POST", URL: srv.URL + "/v1/chat", Header: h, Body: []byte(`{"a":1}`), Timeout: 5 * time.Second}, 10)

	if res.Outcome != planner.Response || res.StatusCode != 200 {
		t.Fatalf("outcome %s %d, err %v", res.Outcome, res.StatusCode, res.Err)
	}
	got := s.all()
	if len(got) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(got))
	}
	r := got[0]
	if r.method != "POST" || r.path != "/v1/chat" || r.body != `{"a":1}` {
		t.Errorf("server saw %s %s %q", r.method, r.path, r.body)
	}
	for _, k := range []string{"Content-Type", "Authorization", "Idempotency-Key"} {
		if r.header.Get(k) != h.Get(k) {
			t.Errorf("server saw %s %q, want %q", k, r.header.Get(k), h.Get(k))
		}
	}
	if ua := r.header.Get("User-Agent"); ua != userAgent {
		t.Errorf("User-Agent %q, want %q", ua, userAgent)
	}
	if ae := r.header.Get("Accept-Encoding"); ae != "" {
		t.Errorf("Accept-Encoding %q added; the request must carry only the spec's headers", ae)
	}
	if !r.close {
		t.Error("the request did not ask to close the connection: keep-alives are on")
	}
}

func TestSendConnectionRefusedIsNotSent(t *testing.T) {
	addr := closedPort(t)
	// Credentials in the URL must not reach the error.
	url := "http://user:hunter2@" + addr + "/path?api_key=topsecret#frag"

	res := newTestSender().Send(t.Context(), Request{Method: "POST", URL: url, Body: []byte("x"), Timeout: 5 * time.Second}, 10)

	if res.Outcome != planner.NotSent || res.Err == nil {
		t.Fatalf("outcome %s, err %v; want NotSent with an error", res.Outcome, res.Err)
	}
	msg := res.Err.Error()
	for _, secret := range []string{"hunter2", "user", "topsecret", "api_key", "frag", "/path"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error %q contains %q", msg, secret)
		}
	}
	if !strings.Contains(msg, "http://"+addr) || !strings.Contains(msg, "not sent") {
		t.Errorf("error %q does not name the target and the outcome", msg)
	}
	if !res.ReceivedAt.Equal(receivedAt) {
		t.Errorf("ReceivedAt %v, want the clock's", res.ReceivedAt)
	}
}

func TestSendTLSHandshakeFailureIsNotSent(t *testing.T) {
	var s seen
	srv := httptest.NewUnstartedServer(recording(&s, func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = discardLogger()
	srv.StartTLS()
	defer srv.Close()

	// The sender does not trust the test server's certificate.
	res := newTestSender().Send(t.Context(), Request{URL: srv.URL + "/", Timeout: 5 * time.Second}, 10)

	if res.Outcome != planner.NotSent {
		t.Fatalf("outcome %s, err %v; want NotSent", res.Outcome, res.Err)
	}
	if n := len(s.all()); n != 0 {
		t.Errorf("server saw %d requests, want 0", n)
	}
}

func TestSendCancelledBeforeSendingIsNotSent(t *testing.T) {
	var s seen
	srv := httptest.NewServer(recording(&s, func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	res := newTestSender().Send(ctx, Request{URL: srv.URL, Timeout: 5 * time.Second}, 10)

	if res.Outcome != planner.NotSent || !errors.Is(res.Err, context.Canceled) {
		t.Fatalf("outcome %s, err %v; want NotSent, canceled", res.Outcome, res.Err)
	}
	if n := len(s.all()); n != 0 {
		t.Errorf("server saw %d requests, want 0", n)
	}
}

func TestSendHangPastTimeoutIsUnknown(t *testing.T) {
	var s seen
	release := make(chan struct{})
	srv := httptest.NewServer(recording(&s, func(_ http.ResponseWriter, r *http.Request) {
		select { // read the request, never answer
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	const timeout = 300 * time.Millisecond

	start := time.Now()
	res := newTestSender().Send(t.Context(), Request{Method: "POST", URL: srv.URL, Body: []byte("x"), Timeout: timeout}, 10)
	elapsed := time.Since(start)

	if res.Outcome != planner.Unknown {
		t.Fatalf("outcome %s, err %v; want Unknown", res.Outcome, res.Err)
	}
	if !errors.Is(res.Err, context.DeadlineExceeded) || !strings.Contains(res.Err.Error(), "request written, no response") {
		t.Errorf("err %v; want a deadline error that says the request was written", res.Err)
	}
	if elapsed < timeout || elapsed > timeout+3*time.Second {
		t.Errorf("Send took %v; the per-attempt timeout is %v", elapsed, timeout)
	}
	if n := len(s.all()); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

func TestSendTimeoutCoversTheBody(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	const timeout = 300 * time.Millisecond

	start := time.Now()
	res := newTestSender().Send(t.Context(), Request{URL: srv.URL, Timeout: timeout}, 1000)
	elapsed := time.Since(start)

	if res.Outcome != planner.Response || res.StatusCode != 200 {
		t.Fatalf("outcome %s %d, err %v; want Response 200", res.Outcome, res.StatusCode, res.Err)
	}
	if res.Body != nil || !errors.Is(res.BodyErr, context.DeadlineExceeded) {
		t.Errorf("body %q, BodyErr %v; want no body and a deadline error", res.Body, res.BodyErr)
	}
	if elapsed < timeout || elapsed > timeout+3*time.Second {
		t.Errorf("Send took %v; the per-attempt timeout is %v", elapsed, timeout)
	}
}

// TestSendNeverResendsSilently proves that a request the server read and then
// dropped is sent once and classified Unknown. net/http's Transport would resend
// a replayable request (GET, or anything with an Idempotency-Key header) by itself
// when it fails on a reused keep-alive connection, so each case first makes a
// successful call that a keep-alive pool would reuse.
func TestSendNeverResendsSilently(t *testing.T) {
	cases := map[string]struct {
		method string
		header http.Header
		body   []byte
		reset  bool
	}{
		"GET, server closes":                 {method: "GET"},
		"GET, server resets":                 {method: "GET", reset: true},
		"POST with Idempotency-Key, closes":  {method: "POST", header: http.Header{"Idempotency-Key": {"k1"}}, body: []byte("x")},
		"POST with Idempotency-Key, resets":  {method: "POST", header: http.Header{"Idempotency-Key": {"k1"}}, body: []byte("x"), reset: true},
		"POST with Idempotency-Key, no body": {method: "POST", header: http.Header{"Idempotency-Key": {"k1"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, addr := droppingServer(t, tc.reset)
			sender := newTestSender()

			warm := sender.Send(t.Context(), Request{URL: "http://" + addr + "/warm", Timeout: 5 * time.Second}, 10)
			if warm.Outcome != planner.Response || warm.StatusCode != 200 {
				t.Fatalf("warm-up: outcome %s %d, err %v", warm.Outcome, warm.StatusCode, warm.Err)
			}
			res := sender.Send(t.Context(), Request{Method: tc.method, URL: "http://" + addr + "/drop", Header: tc.header, Body: tc.body, Timeout: 5 * time.Second}, 10)

			if res.Outcome != planner.Unknown || res.Err == nil {
				t.Errorf("outcome %s, err %v; want Unknown", res.Outcome, res.Err)
			}
			if n := s.count("/drop"); n != 1 {
				t.Errorf("server saw the request %d times, want exactly once", n)
			}
		})
	}
}

// droppingServer answers /warm with 200 (keeping the connection open unless the
// client asked to close it) and reads /drop, then closes the connection without a
// word (or resets it).
func droppingServer(t *testing.T, reset bool) (*seen, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var s seen
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { _ = conn.Close() }()
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				br := bufio.NewReader(conn)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					b, _ := io.ReadAll(req.Body)
					s.add(seenRequest{method: req.Method, path: req.URL.Path, header: req.Header, body: string(b), close: req.Close})
					if req.URL.Path == "/drop" {
						if reset {
							_ = conn.(*net.TCPConn).SetLinger(0)
						}
						return
					}
					if _, err := io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil || req.Close {
						return
					}
				}
			}()
		}
	}()
	return &s, ln.Addr().String()
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// discardLogger silences the TLS server's "handshake error" lines.
func discardLogger() *log.Logger { return log.New(io.Discard, "", 0) }
