package main

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/testenv"
)

// describeTask is the sample whose `kubectl describe` the demo shows: the POST
// with an idempotency key, a Secret-sourced header and a stored response.
const describeTask = "summarize-doc-42"

// report prints the final table, part of one task's description, the stored
// responses, and how to resolve the tasks that wait for a human.
func report(ctx context.Context, k kubectl, env *testenv.Env, names []types.NamespacedName) {
	step("the result")
	_ = k.run(ctx, "get", "rt")

	pick := names[0]
	for _, n := range names {
		if n.Name == describeTask {
			pick = n
		}
	}
	fmt.Println()
	if out, err := k.output(ctx, "describe", "rt", pick.Name, "-n", pick.Namespace); err == nil {
		fmt.Printf("$ kubectl describe rt %s   (status and events)\n", pick.Name)
		fmt.Print(describeExcerpt(out))
	}

	for _, n := range names {
		var t v1alpha1.RetryTask
		if err := env.Client.Get(ctx, n, &t); err != nil {
			continue
		}
		showResponse(ctx, env, &t)
		if t.Status.Phase == v1alpha1.PhaseEscalated || t.Status.Phase == v1alpha1.PhaseOutcomeUnknown {
			fmt.Printf("\n%s is %s (%s) and waits for a human; resolve it with, for example:\n", t.Name, t.Status.Phase, t.Status.Reason)
			fmt.Printf("  kubectl patch rt %s --type merge -p '{\"spec\":{\"resolution\":{\"action\":\"Abandon\",\"note\":\"quota resets tomorrow\"}}}'\n", t.Name)
		}
	}
}

// describeExcerpt keeps the Status section and the Events of `kubectl describe`.
func describeExcerpt(out string) string {
	lines := strings.Split(out, "\n")
	var keep []string
	on := false
	for _, l := range lines {
		if l == "Status:" || strings.HasPrefix(l, "Name:") {
			on = true
		}
		if l == "Spec:" || strings.HasPrefix(l, "API Version:") {
			on = false
		}
		if on {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n") + "\n"
}

// showResponse prints the body a succeeded task stored in its Secret.
func showResponse(ctx context.Context, env *testenv.Env, t *v1alpha1.RetryTask) {
	r := t.Spec.Response
	if t.Status.Phase != v1alpha1.PhaseSucceeded || r == nil || r.SecretName == nil {
		return
	}
	var s corev1.Secret
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: *r.SecretName}, &s); err != nil {
		fmt.Printf("\n(the response Secret %s: %v)\n", *r.SecretName, err)
		return
	}
	fmt.Printf("\n$ kubectl get secret %s -o jsonpath='{.data.body}' | base64 -d\n%s", *r.SecretName, s.Data["body"])
}
