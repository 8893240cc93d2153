package controller_test

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
)

func TestSuccessFirstTryStoresResponseInTwoWrites(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req-1")
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	m := startManager(t, ns, managerOpts{})
	create(t, task(ns, "ok", srv.URL+path("ok"), func(rt *v1alpha1.RetryTask) {
		rt.Spec.Response = &v1alpha1.ResponseTarget{SecretName: ptr.To("ok-result"), MaxBodyBytes: 1024, KeepHeaders: []string{"X-Request-Id"}}
	}))
	rt := waitFor(t, ns, "ok", 20*time.Second, "Succeeded", inPhase(v1alpha1.PhaseSucceeded))

	if got := len(srv.seen(path("ok"))); got != 1 {
		t.Fatalf("server saw %d requests, want 1", got)
	}
	if c := condition(rt, v1alpha1.ConditionSucceeded); c.Status != metav1.ConditionTrue {
		t.Fatalf("Succeeded condition = %+v", c)
	}
	if rt.Status.Attempts != 1 || rt.Status.ActiveAttempt != nil || rt.Status.LastResponse.StatusCode != 200 ||
		rt.Status.LastResponse.RequestID != "req-1" || rt.Status.Deadline == nil {
		t.Fatalf("status: %+v", rt.Status)
	}
	sec := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "ok-result"}, sec); err != nil {
		t.Fatalf("response secret: %v", err)
	}
	if string(sec.Data["body"]) != `{"ok":true}` {
		t.Fatalf("stored body = %q", sec.Data["body"])
	}
	if len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != rt.UID {
		t.Fatalf("response secret not owned by the task: %+v", sec.OwnerReferences)
	}
	// Let any stray reconcile run before counting.
	time.Sleep(300 * time.Millisecond)
	if got := m.statusWrites.Load(); got != 2 {
		t.Fatalf("status writes for one attempt = %d, want 2 (claim+init, then result+decision)", got)
	}
}

// retryAfterThenOK answers the first request 429 with the given headers, then 200.
func retryAfterThenOK(headers map[string]string) func(n int, w http.ResponseWriter, r *http.Request) {
	return func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			for k, v := range headers {
				w.Header()[k] = []string{v}
			}
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	}
}

func TestRetryAfterSecondsIsHonoured(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	srv := newAPI(t, retryAfterThenOK(map[string]string{"Retry-After": "2"}))
	startManager(t, ns, managerOpts{})
	create(t, task(ns, "ra", srv.URL+path("ra")))

	w := waitFor(t, ns, "ra", 20*time.Second, "Waiting", inPhase(v1alpha1.PhaseWaiting))
	if c := condition(w, v1alpha1.ConditionWaiting); c.Status != metav1.ConditionTrue || c.Reason != "ServerRequested" {
		t.Fatalf("Waiting condition = %+v", c)
	}
	if w.Status.LastResponse.RetryAfter != "2" || w.Status.LastResponse.RetryAfterSource != "DeltaSeconds" {
		t.Fatalf("lastResponse = %+v", w.Status.LastResponse)
	}
	waitFor(t, ns, "ra", 20*time.Second, "Succeeded", inPhase(v1alpha1.PhaseSucceeded))
	seen := srv.seen(path("ra"))
	if len(seen) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(seen))
	}
	// I1: the retry arrives no earlier than 2 s after the 429 was answered.
	if gap := seen[1].at.Sub(seen[0].replied); gap < 2*time.Second {
		t.Fatalf("retry arrived %v after the 429, before the server's 2s", gap)
	}
	if got := w.Status.ReadyAt.Sub(seen[0].replied); got < 2*time.Second {
		t.Fatalf("readyAt is %v after the response, want >= 2s", got)
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	var until time.Time
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			// Whole seconds, at least 2 s ahead.
			until = time.Now().Add(3 * time.Second).Truncate(time.Second)
			w.Header().Set("Retry-After", until.UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	startManager(t, ns, managerOpts{})
	create(t, task(ns, "date", srv.URL+path("date")))
	w := waitFor(t, ns, "date", 20*time.Second, "Waiting", inPhase(v1alpha1.PhaseWaiting))
	if w.Status.LastResponse.RetryAfterSource != "HTTPDate" {
		t.Fatalf("source = %q", w.Status.LastResponse.RetryAfterSource)
	}
	waitFor(t, ns, "date", 20*time.Second, "Succeeded", inPhase(v1alpha1.PhaseSucceeded))
	seen := srv.seen(path("date"))
	if len(seen) != 2 || seen[1].at.Before(until) {
		t.Fatalf("retry at %v, before the server's date %v", seen[len(seen)-1].at, until)
	}
}

// The server's clock runs 30 s behind ours: the wait is measured against the
// server's own Date, so the retry still waits the server's full 2 s.
func TestRetryAfterDateWithServerClockBehind(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			server := time.Now().Add(-30 * time.Second).Truncate(time.Second)
			w.Header().Set("Date", server.UTC().Format(http.TimeFormat))
			w.Header().Set("Retry-After", server.Add(2*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	startManager(t, ns, managerOpts{})
	create(t, task(ns, "skew", srv.URL+path("skew")))
	waitFor(t, ns, "skew", 20*time.Second, "Succeeded", inPhase(v1alpha1.PhaseSucceeded))
	seen := srv.seen(path("skew"))
	if len(seen) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(seen))
	}
	if gap := seen[1].at.Sub(seen[0].replied); gap < 2*time.Second {
		t.Fatalf("retry %v after the 429: the skewed Date let it go early", gap)
	}
}

func TestMissingRetryAfterFallbacks(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	srv := newAPI(t, retryAfterThenOK(nil))
	startManager(t, ns, managerOpts{})
	create(t, task(ns, "backoff", srv.URL+path("backoff")))
	create(t, task(ns, "stop", srv.URL+path("stop"), func(rt *v1alpha1.RetryTask) {
		rt.Spec.Retry = &v1alpha1.RetryPolicy{Fallback: &v1alpha1.FallbackSpec{Policy: "Stop"}}
	}))
	create(t, task(ns, "escalate", srv.URL+path("escalate"), func(rt *v1alpha1.RetryTask) {
		rt.Spec.Retry = &v1alpha1.RetryPolicy{Fallback: &v1alpha1.FallbackSpec{Policy: "Escalate"}}
	}))

	waitFor(t, ns, "backoff", 20*time.Second, "Succeeded", inPhase(v1alpha1.PhaseSucceeded))
	if rt := get(t, ns, "backoff"); rt.Status.History[0].Decision != "Wait/FallbackBackoff" {
		t.Fatalf("history = %+v", rt.Status.History)
	}
	rt := waitFor(t, ns, "stop", 20*time.Second, "Failed", inPhase(v1alpha1.PhaseFailed))
	if c := condition(rt, v1alpha1.ConditionSucceeded); c.Status != metav1.ConditionFalse || c.Reason != "RetryAfterMissing" {
		t.Fatalf("Succeeded condition = %+v", c)
	}
	rt = waitFor(t, ns, "escalate", 20*time.Second, "Escalated", inPhase(v1alpha1.PhaseEscalated))
	if c := condition(rt, v1alpha1.ConditionEscalated); c.Status != metav1.ConditionTrue || c.Reason != "RetryAfterMissing" {
		t.Fatalf("Escalated condition = %+v", c)
	}
	time.Sleep(500 * time.Millisecond)
	for name, want := range map[string]int{"backoff": 2, "stop": 1, "escalate": 1} {
		if got := len(srv.seen(path(name))); got != want {
			t.Errorf("%s: server saw %d requests, want %d", name, got, want)
		}
	}
}

func TestServerWaitAboveMaxWaitStops(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	srv := newAPI(t, retryAfterThenOK(map[string]string{"Retry-After": "120"}))
	startManager(t, ns, managerOpts{})
	create(t, task(ns, "fail", srv.URL+path("fail")))
	escalate := func(rt *v1alpha1.RetryTask) {
		rt.Spec.Retry = &v1alpha1.RetryPolicy{EscalateOn: []v1alpha1.StopReason{"WaitBudgetExceeded"}}
	}
	create(t, task(ns, "page", srv.URL+path("page"), escalate, func(rt *v1alpha1.RetryTask) {
		rt.Spec.ActiveDeadlineSeconds = ptr.To[int64](600)
	}))
	create(t, task(ns, "page-short", srv.URL+path("page-short"), escalate))
	rt := waitFor(t, ns, "fail", 20*time.Second, "Failed", inPhase(v1alpha1.PhaseFailed))
	if rt.Status.Reason != "WaitBudgetExceeded" {
		t.Fatalf("reason = %s", rt.Status.Reason)
	}
	// The server's instant is kept, so a later resolution never sends early.
	if rt.Status.ReadyAt == nil || rt.Status.ReadyAt.Sub(srv.seen(path("fail"))[0].replied) < 119*time.Second {
		t.Fatalf("readyAt %v does not keep the server's 120 s", rt.Status.ReadyAt)
	}
	rt = waitFor(t, ns, "page", 20*time.Second, "Escalated", inPhase(v1alpha1.PhaseEscalated))
	if c := condition(rt, v1alpha1.ConditionEscalated); c.Reason != "WaitBudgetExceeded" {
		t.Fatalf("Escalated condition = %+v", c)
	}
	// Retry resolution: still not before the server's instant.
	rt.Spec.Resolution = &v1alpha1.Resolution{Action: v1alpha1.ResolutionRetry, Note: "checked with the provider"}
	if err := env.Client.Update(context.Background(), rt); err != nil {
		t.Fatal(err)
	}
	rt = waitFor(t, ns, "page", 20*time.Second, "resolution applied", func(rt *v1alpha1.RetryTask) bool {
		return rt.Status.ResolvedGeneration == rt.Generation
	})
	if rt.Status.Phase != v1alpha1.PhasePending || rt.Status.ReadyAt == nil || time.Until(rt.Status.ReadyAt.Time) < 100*time.Second {
		t.Fatalf("after Retry: %s readyAt=%v", describe(rt), rt.Status.ReadyAt)
	}
	// With a deadline before the server's instant, Retry stops at once.
	short := waitFor(t, ns, "page-short", 20*time.Second, "Escalated", inPhase(v1alpha1.PhaseEscalated))
	short.Spec.Resolution = &v1alpha1.Resolution{Action: v1alpha1.ResolutionRetry}
	if err := env.Client.Update(context.Background(), short); err != nil {
		t.Fatal(err)
	}
	short = waitFor(t, ns, "page-short", 20*time.Second, "Failed", inPhase(v1alpha1.PhaseFailed))
	if short.Status.Reason != "DeadlineExhausted" {
		t.Fatalf("Retry past the deadline: %s", describe(short))
	}
	time.Sleep(500 * time.Millisecond)
	for _, name := range []string{"fail", "page", "page-short"} {
		if got := len(srv.seen(path(name))); got != 1 {
			t.Errorf("%s: server saw %d requests, want 1", name, got)
		}
	}
}

func TestWaitPastDeadlineStopsAtOnce(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	srv := newAPI(t, retryAfterThenOK(map[string]string{"Retry-After": "30"}))
	startManager(t, ns, managerOpts{})
	create(t, task(ns, "late", srv.URL+path("late"), func(rt *v1alpha1.RetryTask) {
		rt.Spec.ActiveDeadlineSeconds = ptr.To[int64](20)
	}))
	start := time.Now()
	rt := waitFor(t, ns, "late", 15*time.Second, "Failed", inPhase(v1alpha1.PhaseFailed))
	if rt.Status.Reason != "DeadlineExhausted" {
		t.Fatalf("reason = %s", rt.Status.Reason)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("decided after %v: it must be decided at the 429, not when the deadline passes", took)
	}
}

func TestBudgetsAndStatuses(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case path("exhaust"):
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		case path("invalid"):
			w.Header().Set("Retry-After", "soon")
			w.WriteHeader(http.StatusTooManyRequests)
		case path("bad"):
			w.WriteHeader(http.StatusBadRequest)
		case path("unlisted503"), path("listed503"):
			if n == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusOK)
		case path("redirect"):
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}
	})
	startManager(t, ns, managerOpts{})
	for _, name := range []string{"exhaust", "invalid", "bad", "unlisted503", "redirect"} {
		create(t, task(ns, name, srv.URL+path(name)))
	}
	create(t, task(ns, "listed503", srv.URL+path("listed503"), func(rt *v1alpha1.RetryTask) {
		rt.Spec.Retry = &v1alpha1.RetryPolicy{RetryOn: []int32{429, 503}}
	}))
	cases := map[string]struct {
		phase    v1alpha1.Phase
		reason   string
		requests int
	}{
		"exhaust":     {v1alpha1.PhaseFailed, "AttemptBudgetExhausted", 3},
		"invalid":     {v1alpha1.PhaseFailed, "InvalidRetryAfter", 1},
		"bad":         {v1alpha1.PhaseFailed, "NonRetryableStatus", 1},
		"unlisted503": {v1alpha1.PhaseFailed, "NonRetryableStatus", 1},
		"redirect":    {v1alpha1.PhaseFailed, "NonRetryableStatus", 1},
		"listed503":   {v1alpha1.PhaseSucceeded, "Succeeded", 2},
	}
	for name, tc := range cases {
		rt := waitFor(t, ns, name, 20*time.Second, string(tc.phase), inPhase(tc.phase))
		if rt.Status.Reason != tc.reason || int(rt.Status.Attempts) != tc.requests {
			t.Errorf("%s: %s, want reason %s after %d attempts", name, describe(rt), tc.reason, tc.requests)
		}
	}
	time.Sleep(300 * time.Millisecond)
	for name, tc := range cases {
		if got := len(srv.seen(path(name))); got != tc.requests {
			t.Errorf("%s: server saw %d requests, want %d", name, got, tc.requests)
		}
	}
}

func TestUnknownOutcomeIsNeverRetriedUnderManual(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	startManager(t, ns, managerOpts{})
	create(t, task(ns, "hang", srv.URL+path("hang"), func(rt *v1alpha1.RetryTask) {
		rt.Spec.Request.TimeoutSeconds = ptr.To[int32](1)
	}))
	rt := waitFor(t, ns, "hang", 20*time.Second, "OutcomeUnknown", inPhase(v1alpha1.PhaseOutcomeUnknown))
	if c := condition(rt, v1alpha1.ConditionOutcomeUnknown); c.Status != metav1.ConditionTrue {
		t.Fatalf("OutcomeUnknown condition = %+v", c)
	}
	time.Sleep(2 * time.Second)
	if got := len(srv.seen(path("hang"))); got != 1 {
		t.Fatalf("server saw %d requests, want exactly 1", got)
	}
	if rt := get(t, ns, "hang"); rt.Status.Phase != v1alpha1.PhaseOutcomeUnknown || rt.Status.Attempts != 1 {
		t.Fatalf("held task moved on: %s", describe(rt))
	}
}

func TestUnknownOutcomeReconciliation(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/status/check":
			w.WriteHeader(http.StatusNotFound)
		case n == 1:
			<-r.Context().Done() // hangs until the client gives up
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
	startManager(t, ns, managerOpts{})
	create(t, task(ns, "check", srv.URL+path("check"), func(rt *v1alpha1.RetryTask) {
		rt.Spec.Request.TimeoutSeconds = ptr.To[int32](1)
		rt.Spec.OnUnknownOutcome = &v1alpha1.UnknownOutcomePolicy{Policy: "StatusCheck",
			StatusCheck: &v1alpha1.StatusCheck{URL: srv.URL + "/status/check", SucceededStatuses: []int32{200}, NotFoundStatuses: []int32{404}}}
	}))
	create(t, task(ns, "resend", srv.URL+path("resend"), func(rt *v1alpha1.RetryTask) {
		rt.Spec.Request.TimeoutSeconds = ptr.To[int32](1)
		rt.Spec.IdempotencyKey = ptr.To("key-42")
		rt.Spec.OnUnknownOutcome = &v1alpha1.UnknownOutcomePolicy{Policy: "ResendWithIdempotencyKey"}
	}))
	waitFor(t, ns, "check", 30*time.Second, "Succeeded", inPhase(v1alpha1.PhaseSucceeded))
	rt := waitFor(t, ns, "resend", 30*time.Second, "Succeeded", inPhase(v1alpha1.PhaseSucceeded))
	if c := condition(rt, v1alpha1.ConditionOutcomeUnknown); c.Status != metav1.ConditionFalse {
		t.Fatalf("OutcomeUnknown after a known result = %+v", c)
	}
	if got := len(srv.seen("/status/check")); got != 1 {
		t.Fatalf("status check probed %d times, want 1", got)
	}
	seen := srv.seen(path("resend"))
	if len(seen) != 2 {
		t.Fatalf("resend: server saw %d requests, want 2", len(seen))
	}
	for _, a := range seen {
		if got := a.header.Get("Idempotency-Key"); got != "key-42" {
			t.Fatalf("Idempotency-Key = %q, want the same key on every attempt", got)
		}
	}
}

func TestConnectionRefusedIsNotSentAndRetried(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	startManager(t, ns, managerOpts{})
	create(t, task(ns, "refused", "http://"+addr+"/x", func(rt *v1alpha1.RetryTask) {
		rt.Spec.Retry = &v1alpha1.RetryPolicy{MaxAttempts: 3, Fallback: &v1alpha1.FallbackSpec{InitialDelaySeconds: 1, MaxDelaySeconds: ptr.To[int64](1)}}
	}))
	waitFor(t, ns, "refused", 20*time.Second, "Waiting NotSent", func(rt *v1alpha1.RetryTask) bool {
		return condition(rt, v1alpha1.ConditionWaiting).Reason == "NotSent"
	})
	rt := waitFor(t, ns, "refused", 20*time.Second, "Failed", inPhase(v1alpha1.PhaseFailed))
	if rt.Status.Reason != "AttemptBudgetExhausted" || rt.Status.Attempts != 3 {
		t.Fatalf("%s", describe(rt))
	}
	for _, h := range rt.Status.History {
		if h.Outcome != "NotSent" {
			t.Fatalf("history = %+v", rt.Status.History)
		}
	}
}

func TestCrashBetweenClaimAndResult(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	arrived := make(chan struct{}, 10)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done()
	})
	first := startManager(t, ns, managerOpts{})
	create(t, task(ns, "crash", srv.URL+path("crash"), func(rt *v1alpha1.RetryTask) {
		rt.Spec.Request.TimeoutSeconds = ptr.To[int32](2)
	}))
	select {
	case <-arrived:
	case <-time.After(20 * time.Second):
		t.Fatal("the first request never arrived")
	}
	first.stop() // the manager dies with the attempt in flight
	if rt := get(t, ns, "crash"); rt.Status.ActiveAttempt == nil {
		t.Fatalf("no claim recorded before the send: %s", describe(rt))
	}
	startManager(t, ns, managerOpts{})
	rt := waitFor(t, ns, "crash", 20*time.Second, "OutcomeUnknown", inPhase(v1alpha1.PhaseOutcomeUnknown))
	if rt.Status.Reason != "LeaseExpired" {
		t.Fatalf("%s", describe(rt))
	}
	time.Sleep(time.Second)
	if got := len(srv.seen(path("crash"))); got != 1 {
		t.Fatalf("server saw %d requests, want at most 1", got)
	}
}

func TestTwoManagersNeverSendMoreThanRecorded(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond)
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	startManager(t, ns, managerOpts{leaseGrace: 10 * time.Second})
	startManager(t, ns, managerOpts{leaseGrace: 10 * time.Second})
	const n = 50
	for i := range n {
		name := "dup-" + strconv.Itoa(i)
		create(t, task(ns, name, srv.URL+path(name)))
	}
	for i := range n {
		name := "dup-" + strconv.Itoa(i)
		rt := waitFor(t, ns, name, 60*time.Second, "Succeeded", inPhase(v1alpha1.PhaseSucceeded))
		if got := len(srv.seen(path(name))); got > int(rt.Status.Attempts) || got != 2 {
			t.Errorf("%s: server saw %d requests, %d recorded", name, got, rt.Status.Attempts)
		}
	}
}

// A manager that stops (a rollout) lets the attempt in flight finish and
// records its result: no unknown outcome, no second request.
func TestStopDrainsAttemptsInFlight(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	arrived := make(chan struct{}, 10)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		time.Sleep(time.Second)
	})
	m := startManager(t, ns, managerOpts{drain: true})
	create(t, task(ns, "drain", srv.URL+path("drain")))
	select {
	case <-arrived:
	case <-time.After(20 * time.Second):
		t.Fatal("the request never arrived")
	}
	m.stop()
	rt := get(t, ns, "drain")
	if rt.Status.Phase != v1alpha1.PhaseSucceeded || len(srv.seen(path("drain"))) != 1 {
		t.Fatalf("after the stop: %s; server saw %d requests", describe(rt), len(srv.seen(path("drain"))))
	}
}
