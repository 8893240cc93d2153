package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/testenv"
)

// settled says whether a task needs nothing more from the operator: it
// finished, or it waits for a human (Escalated, OutcomeUnknown).
func settled(p v1alpha1.Phase) bool {
	switch p {
	case v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed, v1alpha1.PhaseEscalated, v1alpha1.PhaseOutcomeUnknown:
		return true
	}
	return false
}

// watchUntilDone streams `kubectl get rt -w` to the terminal until every task
// in names is settled (true), the timeout passes (false) or ctx ends.
func watchUntilDone(ctx context.Context, k kubectl, env *testenv.Env, names []types.NamespacedName, timeout time.Duration) (bool, error) {
	args := []string{"get", "rt", "-w"}
	for _, n := range names {
		if n.Namespace != "default" {
			args = append(args, "--all-namespaces")
			break
		}
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	cmd := k.command(watchCtx, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 3 * time.Second
	if err := cmd.Start(); err != nil {
		return false, err
	}
	defer func() {
		stopWatch()
		_ = cmd.Wait() // ends with the interrupt we sent
	}()

	deadline := time.After(timeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-deadline:
			fmt.Printf("\n(not every task finished within %s)\n", timeout)
			return false, nil
		case <-tick.C:
		}
		done, err := allSettled(ctx, env, names)
		if err != nil {
			return false, err
		}
		if done {
			// Let kubectl print the last update before it is stopped.
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
			return true, nil
		}
	}
}

func allSettled(ctx context.Context, env *testenv.Env, names []types.NamespacedName) (bool, error) {
	for _, n := range names {
		var t v1alpha1.RetryTask
		if err := env.Client.Get(ctx, n, &t); err != nil {
			return false, fmt.Errorf("reading RetryTask %s: %w", n, err)
		}
		if !settled(t.Status.Phase) {
			return false, nil
		}
	}
	return true, nil
}
