package dispatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/retry-operator/retry-operator/internal/planner"
)

const (
	// userAgent is sent when the spec sets no User-Agent.
	userAgent = "retry-operator"
	// discardLimit bounds how much of a body that is not kept is read before
	// the connection is closed.
	discardLimit = 4 << 10
	// writeBufferSize holds the request line and the Host header before the
	// first WroteHeaderField callback, so no byte reaches the wire unseen (see
	// tracker). maxURLLength keeps the request line well inside it.
	writeBufferSize = 64 << 10
	maxURLLength    = 16 << 10
	// maxResponseHeaderBytes bounds the response header block.
	maxResponseHeaderBytes = 1 << 20
)

// Sender sends requests and classifies what happened. It never retries and never
// follows a redirect. It is safe for concurrent use.
type Sender struct {
	clock  clock.PassiveClock
	client *http.Client
}

// NewSender returns a Sender that reads time from clk.
func NewSender(clk clock.PassiveClock) *Sender {
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true) // HTTP/1.1 only: one connection, one request, no streams.
	transport := &http.Transport{
		Proxy:       http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
		// Every attempt uses a fresh connection and closes it afterwards.
		//
		// This is what makes a hidden second send impossible. On a reused
		// keep-alive connection, net/http's Transport re-sends a request by
		// itself when reading the response fails (persistConn.shouldRetryRequest:
		// GET, HEAD, OPTIONS, and any request with an Idempotency-Key or
		// X-Idempotency-Key header count as replayable). The server may already
		// have processed the first copy: that would be two sends recorded as one
		// attempt, an unknown outcome silently turned into a duplicate. On a
		// fresh connection the Transport never retries, so with keep-alives off
		// every Send writes the request at most once. The cost is a TCP (and TLS)
		// handshake per attempt, which is small next to a retry schedule
		// measured in seconds.
		DisableKeepAlives: true,
		Protocols:         protocols,
		// Send exactly the headers the spec asks for: no Accept-Encoding added,
		// no body decompressed behind the caller's back.
		DisableCompression:     true,
		WriteBufferSize:        writeBufferSize,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		// The per-attempt context bounds everything from dial to the end of
		// the body; no separate, shorter timeouts.
	}
	return &Sender{
		clock: clk,
		client: &http.Client{
			Transport: transport,
			// A 3xx is returned as the response; following it would be a
			// second request the task never asked for.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// Send makes one attempt. The request's Timeout bounds it from dial to the end of
// the body (DefaultTimeout when zero). maxBody bounds the body read from a 2xx:
// a longer body sets BodyTooLarge and no body is kept; a negative maxBody means
// the body is not wanted and is discarded like a non-2xx one.
//
// The outcome is Response when a status line arrived (even if reading the body
// then failed: see BodyErr), NotSent when the attempt failed before any request
// byte could have been written (DNS, refused connection, TLS handshake, proxy
// CONNECT), and Unknown when request bytes were written and no status line
// arrived (timeout, reset, EOF, or ctx cancelled).
func (s *Sender) Send(ctx context.Context, req Request, maxBody int64) Result {
	target := safeURL(req.URL)
	method := req.Method
	if method == "" {
		method = DefaultMethod
	}
	fail := func(kind planner.OutcomeKind, err error) Result {
		return Result{Outcome: kind, Err: &sendError{method: method, url: target, sent: kind == planner.Unknown, err: err}, ReceivedAt: s.clock.Now()}
	}
	if len(req.URL) > maxURLLength {
		return fail(planner.NotSent, errors.New("URL too long"))
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var tr tracker
	ctx = httptrace.WithClientTrace(ctx, tr.trace())

	var body io.Reader
	if len(req.Body) > 0 {
		body = bytes.NewReader(req.Body)
	}
	hreq, err := http.NewRequestWithContext(ctx, method, req.URL, body)
	if err != nil {
		// The error would repeat the URL, credentials included.
		return fail(planner.NotSent, errors.New("invalid request method or URL"))
	}
	// With no GetBody the Transport cannot rewind the body, which (besides
	// keep-alives being off) also rules out any replay of a request with a body.
	hreq.GetBody = nil
	hreq.Header = req.Header.Clone()
	if hreq.Header == nil {
		hreq.Header = http.Header{}
	}
	if _, ok := hreq.Header["User-Agent"]; !ok {
		hreq.Header.Set("User-Agent", userAgent)
	}

	resp, err := s.client.Do(hreq)
	// Taken once the status line and headers are in: never before the server
	// sent them, so a Retry-After counted from here cannot end early.
	now := s.clock.Now()
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // its message repeats the URL
		}
		if errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil {
			err = fmt.Errorf("no response within the %s timeout: %w", timeout, err)
		}
		kind := planner.NotSent
		if tr.written() {
			kind = planner.Unknown
		}
		r := fail(kind, err)
		r.ReceivedAt = now
		return r
	}
	defer resp.Body.Close()

	res := Result{Outcome: planner.Response, StatusCode: resp.StatusCode, Header: resp.Header, ReceivedAt: now}
	if resp.StatusCode < 200 || resp.StatusCode > 299 || maxBody < 0 {
		_, _ = io.CopyN(io.Discard, resp.Body, discardLimit)
		return res
	}
	limit := maxBody
	if limit < math.MaxInt64 {
		limit++ // one byte more than allowed tells "exactly the limit" from "over it"
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	switch {
	case int64(len(b)) > maxBody:
		res.BodyTooLarge = true
	case err != nil:
		if errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil {
			err = fmt.Errorf("body not complete within the %s timeout: %w", timeout, err)
		}
		res.BodyErr = &sendError{method: method, url: target, sent: true, response: true, err: err}
	default:
		res.Body = b
	}
	return res
}

// tracker records whether any request byte may have reached the wire.
//
// The Transport writes the request line and headers into a buffer and calls
// WroteHeaderField after each header line (Host first); the buffer is flushed
// to the connection after the headers (writeBufferSize holds the request line,
// so it cannot be flushed earlier). So while no WroteHeaderField has fired,
// nothing of the request has been written; after it, the request may have been
// seen. A CONNECT to a proxy and a TLS handshake happen before GotConn and carry
// none of the request. The hooks run on the Transport's goroutines, hence the
// atomic.
type tracker struct {
	wrote atomic.Bool
}

func (t *tracker) trace() *httptrace.ClientTrace {
	mark := func() { t.wrote.Store(true) }
	return &httptrace.ClientTrace{
		WroteHeaderField: func(string, []string) { mark() },
		WroteHeaders:     mark,
		WroteRequest:     func(httptrace.WroteRequestInfo) { mark() },
	}
}

func (t *tracker) written() bool { return t.wrote.Load() }

// sendError describes a failed attempt without header values, and with the URL
// stripped of user information, query and fragment.
type sendError struct {
	method, url string
	// sent: request bytes were written. response: a status line arrived.
	sent, response bool
	err            error
}

func (e *sendError) Error() string {
	switch {
	case e.response:
		return fmt.Sprintf("%s %s: reading the response body: %v", e.method, e.url, e.err)
	case e.sent:
		return fmt.Sprintf("%s %s: request written, no response: %v", e.method, e.url, e.err)
	default:
		return fmt.Sprintf("%s %s: not sent: %v", e.method, e.url, e.err)
	}
}

func (e *sendError) Unwrap() error { return e.err }

// safeURL is the URL's scheme and host, without path, user information, query or fragment, fit for
// errors, events and logs.
func safeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	// Scheme and host only: paths can carry tokens (webhook URLs do).
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}
