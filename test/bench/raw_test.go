package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/testenv"
)

// rawWritesPerTask mirrors the operator's work per task: two attempts, each a
// claim and a result write.
const rawWritesPerTask = 4

// rawCeiling measures how fast the API server takes RetryTask status writes
// when nothing but a plain client loop asks: the tasks are created first (not
// timed), then `concurrency` goroutines each take a task and write its status
// rawWritesPerTask times in a row. Each write reuses the object the previous
// write returned, as the operator writes from its cache without a GET, so this
// is a pure write ceiling. The statuses written have the shape and size of the
// operator's (conditions, history, lastResponse), so the per-write cost
// compares. It returns the number of writes and the time they took.
func rawCeiling(ctx context.Context, c client.Client, ns, url string, tasks, concurrency int) (int, time.Duration, error) {
	objs := make([]*v1alpha1.RetryTask, tasks)
	for i := range objs {
		objs[i] = newTask(ns, fmt.Sprintf("raw-%05d", i), url)
	}
	if err := testenv.CreateAll(ctx, c, objs, concurrency); err != nil {
		return 0, 0, err
	}

	work := make(chan *v1alpha1.RetryTask, len(objs))
	for _, o := range objs {
		work <- o
	}
	close(work)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		writes   int
	)
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for rt := range work {
				for step := range rawWritesPerTask {
					operatorLikeStatus(rt, step, time.Now())
					if err := c.Status().Update(ctx, rt); err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = fmt.Errorf("raw status write %s step %d: %w", rt.Name, step, err)
						}
						mu.Unlock()
						break
					}
					n++
				}
			}
			mu.Lock()
			writes += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	return writes, time.Since(start), firstErr
}

// operatorLikeStatus sets the status the operator would write at step 0 (claim
// of attempt 1), 1 (429 recorded, Waiting), 2 (claim of attempt 2) and 3
// (200 recorded, Succeeded).
func operatorLikeStatus(rt *v1alpha1.RetryTask, step int, now time.Time) {
	s := &rt.Status
	mt := metav1.NewMicroTime(now)
	if s.Deadline == nil {
		d := metav1.NewMicroTime(now.Add(10 * time.Minute))
		s.Deadline = &d
	}
	attempt := int32(step/2 + 1)
	phase, reason, msg := v1alpha1.PhaseDispatching, "Dispatching", fmt.Sprintf("attempt %d of 3 is being sent", attempt)
	s.ReadyAt = nil
	if step%2 == 0 { // a claim
		s.Attempts = attempt
		s.ActiveAttempt = &v1alpha1.ActiveAttempt{Number: attempt, StartedAt: mt, LeaseExpiresAt: metav1.NewMicroTime(now.Add(45 * time.Second)), Mode: "Send"}
	} else { // a result
		code := int32(429)
		phase, reason, msg = v1alpha1.PhaseWaiting, "ServerRequested", "the server asked to wait 1s (Retry-After: 1); next attempt not before "+now.Add(time.Second).UTC().Format(time.RFC3339Nano)
		if step == 3 {
			code, phase, reason, msg = 200, v1alpha1.PhaseSucceeded, "Succeeded", "the server answered 200"
		} else {
			r := metav1.NewMicroTime(now.Add(time.Second))
			s.ReadyAt = &r
		}
		s.ActiveAttempt = nil
		s.LastResponse = &v1alpha1.LastResponse{Attempt: attempt, StatusCode: code, RetryAfter: "1", RetryAfterSource: "DeltaSeconds",
			Date: now.UTC().Format(time.RFC1123), ReceivedAt: mt}
		s.History = append(s.History, v1alpha1.AttemptRecord{Number: attempt, SentAt: mt, Outcome: "Response", StatusCode: code, Decision: "Wait/ServerRequested"})
	}
	s.Phase, s.Reason, s.ObservedGeneration = phase, reason, rt.Generation
	succeeded := metav1.ConditionUnknown
	if phase == v1alpha1.PhaseSucceeded {
		succeeded = metav1.ConditionTrue
	}
	waiting := metav1.ConditionFalse
	if phase == v1alpha1.PhaseWaiting {
		waiting = metav1.ConditionTrue
	}
	lt := metav1.NewTime(now)
	s.Conditions = []metav1.Condition{
		{Type: v1alpha1.ConditionSucceeded, Status: succeeded, Reason: reason, Message: msg, ObservedGeneration: rt.Generation, LastTransitionTime: lt},
		{Type: v1alpha1.ConditionWaiting, Status: waiting, Reason: reason, Message: msg, ObservedGeneration: rt.Generation, LastTransitionTime: lt},
		{Type: v1alpha1.ConditionEscalated, Status: metav1.ConditionFalse, Reason: "NotEscalated", Message: "no human action is needed", ObservedGeneration: rt.Generation, LastTransitionTime: lt},
		{Type: v1alpha1.ConditionOutcomeUnknown, Status: metav1.ConditionFalse, Reason: "OutcomeKnown", Message: "every attempt's outcome is known", ObservedGeneration: rt.Generation, LastTransitionTime: lt},
	}
}
