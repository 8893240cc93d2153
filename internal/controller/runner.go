package controller

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/dispatch"
	"github.com/retry-operator/retry-operator/internal/metrics"
	"github.com/retry-operator/retry-operator/internal/planner"
	"github.com/retry-operator/retry-operator/internal/retryafter"
)

// Runner sends attempts off the reconcile workers, at most Slots at a time, so a
// slow target never delays another task's due time. It keeps the in-process
// state: which tasks have an attempt running here, and the monotonic instant
// before which each task may not be sent.
type Runner struct {
	Client    client.Client
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Clock     clock.Clock
	Sender    *dispatch.Sender
	Events    *Events
	// Queues receives pauses from throttling responses; nil without queues.
	Queues *Queues
	// LeaseGrace is added to the request timeout to form the attempt's lease.
	LeaseGrace time.Duration
	// AbortOnStop makes a stopping manager abandon attempts in flight, as a
	// crash would (their leases then make them unknown outcomes); by default
	// they finish and are recorded.
	AbortOnStop bool
	// ClaimLead is the least time before its readyAt an attempt may be
	// claimed; the lead grows with recent claim-write latency (see lead). The
	// send still waits for readyAt.
	ClaimLead time.Duration

	slots *slots
	wake  chan event.GenericEvent
	mu    sync.Mutex
	rnd   *rand.Rand
	// running holds the tasks with an attempt handled here; the value says
	// whether a reconcile was skipped meanwhile and must be made up.
	running map[types.UID]bool
	// notBefore holds the in-process monotonic readyAt: both it and the stored
	// wall-clock readyAt must pass before a send (I1).
	notBefore map[types.UID]time.Time
	// failures counts failed claim writes per task, for backoff.
	failures map[types.UID]int
	// claimWrites holds the latest claim-write latencies, for lead.
	claimWrites [64]time.Duration
	claimNext   int
	wg          sync.WaitGroup
	ctx         context.Context
}

// NewRunner makes a runner that sends at most slots attempts at once.
func NewRunner(c client.Client, apiReader client.Reader, scheme *runtime.Scheme, clk clock.Clock, ev *Events, slots int) *Runner {
	return &Runner{
		Client: c, APIReader: apiReader, Scheme: scheme, Clock: clk, Events: ev,
		Sender:     dispatch.NewSender(clk),
		LeaseGrace: defaultLeaseGrace,
		ClaimLead:  defaultClaimLead,
		slots:      newSlots(slots),
		wake:       make(chan event.GenericEvent, 1024),
		rnd:        rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x9e3779b97f4a7c15)),
		running:    map[types.UID]bool{},
		notBefore:  map[types.UID]time.Time{},
		failures:   map[types.UID]int{},
	}
}

// Start runs until ctx ends, then waits for the attempts in flight; it makes the
// runner a manager Runnable so that sends stop with the manager.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	r.ctx = ctx
	r.mu.Unlock()
	<-ctx.Done()
	r.wg.Wait()
	return nil
}

// Running reports whether an attempt of the task is being handled here; if so
// the caller skips the task, and the runner looks again when it finishes.
func (r *Runner) Running(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.running[uid]
	if ok {
		r.running[uid] = true // the caller skips this reconcile
	}
	return ok
}

// sendTime is the earliest instant the task may be sent: now, its stored
// wall-clock readyAt, or the in-process monotonic one, whichever is latest.
// An attempt may be claimed up to ClaimLead before it, so that the claim's
// write is not added to the wait; the send itself still waits for it (I1).
func (r *Runner) sendTime(task *v1alpha1.RetryTask, now time.Time) time.Time {
	at := now
	if ra := task.Status.ReadyAt; ra != nil && ra.After(at) {
		at = ra.Time
	}
	if wait, ok := r.dueLocally(task.UID, now); !ok && now.Add(wait).After(at) {
		at = now.Add(wait)
	}
	return at
}

// maxClaimLead bounds how early an attempt is claimed.
const maxClaimLead = 2 * time.Second

// lead is how long before its send instant an attempt is claimed: enough to
// cover the slowest recent claim write, so that the write does not make the
// send late, and at least ClaimLead.
func (r *Runner) lead() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	slowest := time.Duration(0)
	for _, d := range r.claimWrites {
		slowest = max(slowest, d)
	}
	return min(maxClaimLead, max(r.ClaimLead, slowest*5/4))
}

func (r *Runner) claimWritten(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.claimWrites[r.claimNext] = d
	r.claimNext = (r.claimNext + 1) % len(r.claimWrites)
}

// waitUntil sleeps on the clock until both the wall-clock instant and the
// task's monotonic readyAt have passed; false if ctx ends first.
func (r *Runner) waitUntil(ctx context.Context, task *v1alpha1.RetryTask, at time.Time) bool {
	for {
		now := r.Clock.Now()
		d := at.Sub(now)
		if wait, ok := r.dueLocally(task.UID, now); !ok && wait > d {
			d = wait
		}
		if d <= 0 {
			return true
		}
		t := r.Clock.NewTimer(d)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}

// dueLocally reports whether the in-process monotonic readyAt has passed.
func (r *Runner) dueLocally(uid types.UID, now time.Time) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	nb, ok := r.notBefore[uid]
	if !ok || !now.Before(nb) {
		return 0, true
	}
	return nb.Sub(now), false
}

func (r *Runner) scheduled(uid types.UID, now time.Time, delay time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notBefore[uid] = now.Add(delay)
}

// Forget drops in-process state of a deleted task.
func (r *Runner) Forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.notBefore, uid)
}

func (r *Runner) jitter() planner.Rand { return lockedRand{r} }

type lockedRand struct{ r *Runner }

func (l lockedRand) Int64N(n int64) int64 {
	l.r.mu.Lock()
	defer l.r.mu.Unlock()
	return l.r.rnd.Int64N(n)
}

// Dispatch hands a due task to the runner. The task carries any status changes
// the reconciler made (they go out in the claim write). It returns false when
// the task is already being handled here or the runner is not started.
// release, when not nil, is called once the attempt is over (a queue slot).
func (r *Runner) Dispatch(task *v1alpha1.RetryTask, mode string, release func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.running[task.UID]; ok || r.ctx == nil || r.ctx.Err() != nil {
		return false
	}
	r.running[task.UID] = false
	r.wg.Add(1)
	go r.run(r.ctx, task.DeepCopy(), mode, release)
	return true
}

func (r *Runner) run(ctx context.Context, task *v1alpha1.RetryTask, mode string, release func()) {
	defer r.wg.Done()
	// finish ends the run as soon as its result is written, so that the
	// event from that write finds the task free; it runs once.
	var once sync.Once
	finish := func() {
		once.Do(func() {
			if release != nil {
				release()
			}
			r.mu.Lock()
			skipped := r.running[task.UID]
			delete(r.running, task.UID)
			r.mu.Unlock()
			if skipped {
				r.poke(task) // e.g. the event of our own result write
			}
		})
	}
	var (
		again time.Duration
		wrote bool
	)
	defer func() {
		finish()
		// A written result brings its own watch event. Otherwise look again,
		// in case an event was skipped while we ran; after a failed write,
		// only after a backoff.
		switch {
		case wrote:
		case again > 0:
			time.AfterFunc(again, func() { r.poke(task) })
		default:
			r.poke(task)
		}
	}()
	readyAt := task.CreationTimestamp.Time
	if task.Status.ReadyAt != nil {
		readyAt = task.Status.ReadyAt.Time
	}
	if !r.slots.acquire(ctx, task.Status.Attempts > 0, readyAt) {
		return
	}
	defer r.slots.release()

	log := ctrl.LoggerFrom(ctx).WithValues("retrytask", client.ObjectKeyFromObject(task))
	ctx = ctrl.LoggerInto(ctx, log)
	if mode == ModeStatusCheck {
		again, wrote = r.statusCheck(ctx, task, finish)
		return
	}
	again, wrote = r.attempt(ctx, task, finish)
}

func (r *Runner) poke(task *v1alpha1.RetryTask) {
	select {
	case r.wake <- event.GenericEvent{Object: task}:
	default: // the controller is already busy; the next event or requeue covers it
	}
}

// drainable is the context for a claimed attempt: unless AbortOnStop, a
// manager that stops lets the attempt finish and records its result (the
// request is bounded by its timeout), so a rollout does not turn attempts in
// flight into unknown outcomes.
func (r *Runner) drainable(ctx context.Context) context.Context {
	if r.AbortOnStop {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// writeFailed counts a failed claim write and returns how long to wait before
// trying again, so that an API server outage is not met with a hot loop.
func (r *Runner) writeFailed(uid types.UID) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.failures[uid]
	r.failures[uid] = n + 1
	return min(30*time.Second, (500*time.Millisecond)<<min(n, 6))
}

func (r *Runner) writeSucceeded(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failures, uid)
}

// attempt claims, sends and records one attempt. It returns how long to wait
// before looking at the task again when a write failed.
func (r *Runner) attempt(ctx context.Context, task *v1alpha1.RetryTask, finish func()) (time.Duration, bool) {
	log := ctrl.LoggerFrom(ctx)
	// Secrets are read before the claim, so that a slow read never eats into
	// the lease; they are still read at send time and never kept.
	req, buildErr := dispatch.Build(ctx, r.APIReader, task)
	// Deadline, attempts and readyAt are checked here, after any wait for a
	// slot, as the last step before the claim (I2).
	now := r.Clock.Now()
	at := r.sendTime(task, now)
	if at.Sub(now) > r.lead() {
		return 0, false
	}
	// Claim evaluates the deadline and readyAt at the send instant.
	st, res := planner.Claim(plannerState(&task.Status), plannerPolicy(task).MaxAttempts, at)
	switch res {
	case planner.DeadlinePassed, planner.BudgetSpent:
		reason, msg := claimStop(res, task, now)
		stopOrEscalate(task, reason, msg, now)
		if err := r.Client.Status().Update(ctx, task); err != nil {
			if apierrors.IsConflict(err) {
				return 0, false
			}
			log.Error(err, "recording the stop")
			return r.writeFailed(task.UID), false
		}
		r.Events.decision(task)
		return 0, true
	case planner.Claimed:
	default:
		return 0, false // not due or busy: the reconciler will look again
	}
	prev := task.Status.ReadyAt
	claimAttempt(task, st, now, r.LeaseGrace+at.Sub(now))
	// The claim carries the resourceVersion we read: a conflict means someone
	// else acted, so nothing is sent (I4).
	if err := r.Client.Status().Update(ctx, task); err != nil {
		if apierrors.IsConflict(err) {
			return 0, false
		}
		log.Error(err, "claiming the attempt; nothing was sent")
		return r.writeFailed(task.UID), false
	}
	r.claimWritten(r.Clock.Since(now))
	r.writeSucceeded(task.UID)
	number := st.ActiveAttempt
	ctx = r.drainable(ctx)
	// Claimed a little ahead: the send still waits for readyAt (I1).
	if !r.waitUntil(ctx, task, at) {
		return 0, false // stopping: the lease makes this attempt an unknown outcome
	}
	if prev != nil {
		metrics.Lateness.Observe(r.Clock.Now().Sub(prev.Time).Seconds())
	}

	result := r.send(ctx, task, req, buildErr)
	// The queue pauses the host as soon as the server asks, before the
	// result is written, so nothing else in the queue goes meanwhile.
	r.Queues.pauseFor(task, result)
	if ctx.Err() != nil && result.Outcome != planner.Response {
		// The manager is stopping. The lease will turn this attempt into an
		// unknown outcome on the next start; nothing more is written now.
		return 0, false
	}
	// A response already received is recorded even while the manager stops.
	return 0, r.record(context.WithoutCancel(ctx), task, number, ModeSend, result, finish)
}

func claimStop(res planner.ClaimResult, task *v1alpha1.RetryTask, now time.Time) (planner.StopReason, string) {
	if res == planner.DeadlinePassed {
		return planner.DeadlineExhausted, fmt.Sprintf("the deadline %s passed before attempt %d could be sent",
			task.Status.Deadline.UTC().Format(time.RFC3339Nano), task.Status.Attempts+1)
	}
	return planner.AttemptBudgetExhausted, fmt.Sprintf("all %d attempts are used", task.Status.Attempts)
}

// send sends the built request, unless the deadline has passed or the lease
// could not cover the whole request any more; a build failure is NotSent.
func (r *Runner) send(ctx context.Context, task *v1alpha1.RetryTask, req dispatch.Request, buildErr error) dispatch.Result {
	if buildErr != nil {
		return dispatch.Result{Outcome: planner.NotSent, Err: buildErr, ReceivedAt: r.Clock.Now()}
	}
	if q := r.Queues.of(task); q != nil {
		// No later than the lease can still cover the request, nor the deadline.
		latest := task.Status.ActiveAttempt.LeaseExpiresAt.Add(-req.Timeout)
		if d := task.Status.Deadline.Time; d.Before(latest) {
			latest = d
		}
		if !q.Gate(ctx, latest) {
			return dispatch.Result{Outcome: planner.NotSent, Err: errGate, ReceivedAt: r.Clock.Now()}
		}
	}
	now := r.Clock.Now()
	switch {
	case !now.Before(task.Status.Deadline.Time):
		return dispatch.Result{Outcome: planner.NotSent, Err: errDeadline, ReceivedAt: now}
	case now.Add(req.Timeout).After(task.Status.ActiveAttempt.LeaseExpiresAt.Time):
		return dispatch.Result{Outcome: planner.NotSent, Err: errLease, ReceivedAt: now}
	}
	res := r.Sender.Send(ctx, req, maxBodyOf(task))
	res.SentAt = now
	return res
}

var errGate = errors.New("the queue's rate limit had no token before the lease or the deadline would end; it was not sent")

var errLease = errors.New("the claim took so long that the lease could not cover the request; it was not sent")

var errDeadline = errors.New("the deadline passed before the request was sent")

func maxBodyOf(t *v1alpha1.RetryTask) int64 { return dispatch.MaxBody(t) }

// record writes the result and the decision in one status write. It re-reads
// and re-applies on conflict as long as the attempt is still the active one.
// It reports whether the result was written, and then calls finish at once.
func (r *Runner) record(ctx context.Context, task *v1alpha1.RetryTask, number int, mode string, result dispatch.Result, finish func()) bool {
	log := ctrl.LoggerFrom(ctx)
	if mode == ModeSend && result.Outcome == planner.Response && result.StatusCode >= 200 && result.StatusCode < 300 {
		result = r.store(ctx, task, result)
	}
	// Conflicts and transient API errors are retried while the lease lasts:
	// after it, the attempt is an unknown outcome anyway.
	leaseEnd := time.Time{}
	if a := task.Status.ActiveAttempt; a != nil {
		leaseEnd = a.LeaseExpiresAt.Time
	}
	retryable := func(err error) bool {
		if errors.Is(err, errSuperseded) || apierrors.IsNotFound(err) || apierrors.IsInvalid(err) ||
			apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) {
			return false
		}
		return apierrors.IsConflict(err) || r.Clock.Now().Before(leaseEnd)
	}
	first := true
	err := retry.OnError(recordBackoff, retryable, func() error {
		if !first {
			fresh := &v1alpha1.RetryTask{}
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(task), fresh); err != nil {
				return err
			}
			a := fresh.Status.ActiveAttempt
			if a == nil || int(a.Number) != number || a.Mode != mode {
				return errSuperseded
			}
			task = fresh
		}
		first = false
		now := r.Clock.Now()
		if mode == ModeStatusCheck {
			applyStatusCheck(task, result, r.jitter(), now)
		} else {
			applyAttemptResult(task, number, result, r.jitter(), now)
		}
		return r.Client.Status().Update(ctx, task)
	})
	switch {
	case errors.Is(err, errSuperseded):
		log.Info("result dropped: the attempt is no longer active", "attempt", number)
		return false
	case err != nil:
		log.Error(err, "recording the result; the lease will mark the outcome unknown", "attempt", number)
		return false
	}
	if task.Status.Phase == v1alpha1.PhaseWaiting && task.Status.ReadyAt != nil {
		now := r.Clock.Now()
		r.scheduled(task.UID, now, task.Status.ReadyAt.Sub(now))
	}
	if until, ok := serverWait(task, result); ok && r.Queues != nil {
		r.Queues.pause(task, until)
	}
	finish()
	r.Events.attempt(task, number, result)
	observe(task, mode, result)
	return true
}

// observe records an attempt and its decision in the metrics.
func observe(task *v1alpha1.RetryTask, mode string, result dispatch.Result) {
	if mode == ModeSend {
		metrics.Attempts.WithLabelValues(hostOf(task.Spec.Request.URL), string(result.Outcome), metrics.Code(result.StatusCode)).Inc()
	}
	metrics.Decisions.WithLabelValues(string(task.Status.Phase), task.Status.Reason).Inc()
	if until, ok := serverWait(task, result); ok {
		metrics.ServerWait.Observe(until.Sub(result.ReceivedAt).Seconds())
	}
}

var errSuperseded = errors.New("attempt superseded")

// recordBackoff paces result writes retried after conflicts or API errors.
var recordBackoff = wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 12, Cap: 5 * time.Second}

// serverWait is the instant a throttling response (429, or a retryable 5xx)
// asked the client to wait until, if it gave a valid Retry-After.
func serverWait(task *v1alpha1.RetryTask, result dispatch.Result) (time.Time, bool) {
	lr := task.Status.LastResponse
	if result.Outcome != planner.Response || lr == nil || task.Status.ReadyAt == nil ||
		(result.StatusCode != http.StatusTooManyRequests && result.StatusCode < 500) {
		return time.Time{}, false
	}
	if lr.RetryAfterSource != string(retryafter.DeltaSeconds) && lr.RetryAfterSource != string(retryafter.HTTPDate) {
		return time.Time{}, false
	}
	return task.Status.ReadyAt.Time, true
}

// store keeps a successful response where spec.response says. A body over the
// bound or a failed write turns the result into a failure with a clear reason.
func (r *Runner) store(ctx context.Context, task *v1alpha1.RetryTask, result dispatch.Result) dispatch.Result {
	if task.Spec.Response == nil {
		return result
	}
	if result.BodyTooLarge || result.BodyErr != nil {
		return result
	}
	err := retry.OnError(retry.DefaultBackoff, func(err error) bool { return !errors.Is(err, dispatch.ErrNotOwned) }, func() error {
		return dispatch.Store(ctx, r.Client, r.APIReader, r.Scheme, task, result)
	})
	if err != nil {
		result.BodyErr = fmt.Errorf("storing the response: %w", err)
	}
	return result
}

// applyAttemptResult records a send's result and the planner's decision.
func applyAttemptResult(task *v1alpha1.RetryTask, number int, result dispatch.Result, rnd planner.Rand, now time.Time) {
	outcome := planner.Outcome{Kind: result.Outcome, Attempt: number, StatusCode: result.StatusCode}
	if result.Header != nil {
		outcome.RetryAfter = result.Header.Values("Retry-After")
		outcome.Date = result.Header.Values("Date")
	}
	state := plannerState(&task.Status)
	recordResult(task, result, now)
	if failed, reason, msg := responseNotKept(task, result); failed {
		task.Status.ReadyAt = nil
		task.Status.History[len(task.Status.History)-1].Decision = "Stop/" + reason
		setPhase(task, v1alpha1.PhaseFailed, reason, msg, now)
		return
	}
	d := planner.Plan(state, outcome, plannerPolicy(task), now, rnd)
	if result.Outcome == planner.NotSent && result.Err != nil {
		// Why it was not sent (a missing Secret, a refused connection) is
		// what on-call needs, whatever the decision; it names no value.
		d.Message += " (" + result.Err.Error() + ")"
	}
	if d.Kind == planner.Reconcile {
		reconcileUnknown(task, ReasonTimeout, d.Message, rnd, now)
		return
	}
	applyDecision(task, d, now)
	keepServerWait(task, d, outcome, now)
}

// keepServerWait records the server's requested instant when the task stops or
// escalates instead of waiting, so that a later spec.resolution Retry still
// never sends earlier than the server said (I1). The header is read here too
// when the planner did not need it (a status not in retryOn).
func keepServerWait(task *v1alpha1.RetryTask, d planner.Decision, o planner.Outcome, now time.Time) {
	if d.Kind == planner.Wait || o.Kind != planner.Response || len(o.RetryAfter) == 0 {
		return
	}
	ra := d.RetryAfter
	if ra == nil {
		v := retryafter.Parse(o.RetryAfter, now)
		ra = &v
		if lr := task.Status.LastResponse; lr != nil {
			lr.RetryAfter, lr.RetryAfterSource = v.Raw, string(v.Source)
		}
	}
	if ra.Source != retryafter.DeltaSeconds && ra.Source != retryafter.HTTPDate {
		return
	}
	at := planner.CeilMicro(now.Add(ra.Wait(now, o.Date)))
	if task.Status.ReadyAt == nil || at.After(task.Status.ReadyAt.Time) {
		task.Status.ReadyAt = micro(at)
	}
}

// responseNotKept reports a 2xx whose body could not be kept: the call
// succeeded on the server, so it is not retried, but the task cannot succeed.
func responseNotKept(task *v1alpha1.RetryTask, result dispatch.Result) (bool, string, string) {
	if result.Outcome != planner.Response || result.StatusCode < 200 || result.StatusCode >= 300 {
		return false, "", ""
	}
	if result.BodyTooLarge {
		return true, ReasonResponseTooLarge, fmt.Sprintf(
			"the server answered %d but the body is larger than spec.response.maxBodyBytes (%d); it was not stored and the call is not repeated",
			result.StatusCode, maxBodyOf(task))
	}
	if result.BodyErr != nil {
		return true, ReasonResponseNotStored, fmt.Sprintf(
			"the server answered %d but the response could not be kept: %v; the call is not repeated", result.StatusCode, result.BodyErr)
	}
	return false, "", ""
}

// statusCheck probes whether an unknown attempt was processed. It returns how
// long to wait before looking again when the claim write failed.
func (r *Runner) statusCheck(ctx context.Context, task *v1alpha1.RetryTask, finish func()) (time.Duration, bool) {
	now := r.Clock.Now()
	if task.Status.ActiveAttempt != nil || task.Status.Phase != v1alpha1.PhaseOutcomeUnknown {
		return 0, false
	}
	req, buildErr := dispatch.BuildStatusCheck(ctx, r.APIReader, task)
	claimStatusCheck(task, now, r.LeaseGrace)
	if err := r.Client.Status().Update(ctx, task); err != nil {
		if apierrors.IsConflict(err) {
			return 0, false
		}
		ctrl.LoggerFrom(ctx).Error(err, "claiming the status check; nothing was sent")
		return r.writeFailed(task.UID), false
	}
	r.writeSucceeded(task.UID)
	number := int(task.Status.Attempts)
	ctx = r.drainable(ctx)
	var result dispatch.Result
	if buildErr != nil {
		result = dispatch.Result{Outcome: planner.NotSent, Err: buildErr, ReceivedAt: r.Clock.Now()}
	} else {
		result = r.Sender.Send(ctx, req, 0)
	}
	if ctx.Err() != nil && result.Outcome != planner.Response {
		return 0, false
	}
	return 0, r.record(context.WithoutCancel(ctx), task, number, ModeStatusCheck, result, finish)
}

// applyStatusCheck interprets a status check: processed → Succeeded; not found →
// resend within budgets; anything else stays unknown for a human.
func applyStatusCheck(task *v1alpha1.RetryTask, result dispatch.Result, rnd planner.Rand, now time.Time) {
	task.Status.ActiveAttempt = nil
	sc := task.Spec.OnUnknownOutcome.StatusCheck
	n := task.Status.Attempts
	if result.Outcome == planner.Response {
		if contains(sc.SucceededStatuses, result.StatusCode) {
			setPhase(task, v1alpha1.PhaseSucceeded, ReasonStatusCheckOK,
				fmt.Sprintf("the status check answered %d: attempt %d was processed", result.StatusCode, n), now)
			return
		}
		if contains(sc.NotFoundStatuses, result.StatusCode) {
			resend(task, fmt.Sprintf("the status check answered %d: attempt %d was not processed", result.StatusCode, n), false, rnd, now)
			return
		}
	}
	what := string(result.Outcome)
	if result.Outcome == planner.Response {
		what = fmt.Sprintf("status %d", result.StatusCode)
	}
	setPhase(task, v1alpha1.PhaseOutcomeUnknown, ReasonInconclusive,
		fmt.Sprintf("the status check of attempt %d was inconclusive (%s); set spec.resolution to act", n, what), now)
}

func contains(list []int32, code int) bool {
	for _, c := range list {
		if int(c) == code {
			return true
		}
	}
	return false
}

// reconcileUnknown applies spec.onUnknownOutcome to an attempt whose outcome is
// unknown (I5): it is never simply retried.
func reconcileUnknown(task *v1alpha1.RetryTask, reason, why string, rnd planner.Rand, now time.Time) {
	policy := "Manual"
	if task.Spec.OnUnknownOutcome != nil && task.Spec.OnUnknownOutcome.Policy != "" {
		policy = task.Spec.OnUnknownOutcome.Policy
	}
	switch policy {
	case "ResendWithIdempotencyKey":
		resend(task, why, true, rnd, now)
	case "StatusCheck":
		setPhase(task, v1alpha1.PhaseOutcomeUnknown, reason, why+"; a status check will tell whether it was processed", now)
	default:
		setPhase(task, v1alpha1.PhaseOutcomeUnknown, reason, why+"; it is held until spec.resolution says what to do", now)
	}
}

// resend schedules the next attempt after one that was not processed or whose
// outcome is unknown. It is planned like a NotSent attempt: fallback backoff,
// inside the same attempt budget and deadline. When the outcome is still
// unknown and no resend is possible, the task stays held as OutcomeUnknown.
func resend(task *v1alpha1.RetryTask, why string, stillUnknown bool, rnd planner.Rand, now time.Time) {
	st := plannerState(&task.Status)
	st.ActiveAttempt = st.Attempts
	d := planner.Plan(st, planner.Outcome{Kind: planner.NotSent, Attempt: st.Attempts}, plannerPolicy(task), now, rnd)
	switch {
	case d.Kind == planner.Wait:
		d.Why = planner.WaitFallbackBackoff
		d.Message = fmt.Sprintf("%s; resending not before %s", why, d.ReadyAt.UTC().Format(time.RFC3339Nano))
		applyDecision(task, d, now)
		if stillUnknown {
			meta.SetStatusCondition(&task.Status.Conditions, metav1.Condition{
				Type: v1alpha1.ConditionOutcomeUnknown, Status: metav1.ConditionTrue, Reason: ReasonResending,
				Message: d.Message + " with the same idempotency key", ObservedGeneration: task.Generation,
				LastTransitionTime: metav1.NewTime(now),
			})
		}
	case stillUnknown:
		setPhase(task, v1alpha1.PhaseOutcomeUnknown, ReasonTimeout,
			fmt.Sprintf("%s; it cannot be resent (%s); set spec.resolution to act", why, d.Reason), now)
	default:
		applyDecision(task, d, now)
	}
}
