package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// TestControlPlaneIsReal proves the tests talk to a real API server: a ConfigMap
// round-trips through etcd and the RetryTask CRD is served.
func TestControlPlaneIsReal(t *testing.T) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	var got corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if got.Data["k"] != "v" || got.ResourceVersion == "" || got.UID == "" {
		t.Fatalf("round trip through the API server lost data: %+v", got)
	}
	var list v1alpha1.RetryTaskList
	if err := env.Client.List(ctx, &list, client.InNamespace("default")); err != nil {
		t.Fatalf("RetryTask CRD not served: %v", err)
	}
}

func apply(t *testing.T, manifest string) error {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatalf("bad test manifest: %v", err)
	}
	return env.Client.Create(context.Background(), u)
}

const base = `apiVersion: retryoperator.dev/v1alpha1
kind: RetryTask
metadata: {generateName: v-, namespace: default}
`

func TestDefaults(t *testing.T) {
	rt := &v1alpha1.RetryTask{}
	if err := yaml.Unmarshal([]byte(base+"spec: {request: {url: 'http://127.0.0.1:1/x'}, activeDeadlineSeconds: 60}"), rt); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(context.Background(), rt); err != nil {
		t.Fatalf("a GET with only url and a deadline must be accepted: %v", err)
	}
	s := rt.Spec
	if s.Request.Method != "GET" || *s.Request.TimeoutSeconds != 30 || s.Retry.MaxAttempts != 3 ||
		s.Retry.MaxWaitSeconds != 60 || len(s.Retry.RetryOn) != 1 || s.Retry.RetryOn[0] != 429 ||
		s.Retry.Fallback.Policy != "Backoff" || s.Retry.Fallback.InitialDelaySeconds != 1 ||
		s.OnUnknownOutcome.Policy != "Manual" || *s.IdempotencyKeyHeader != "Idempotency-Key" {
		t.Fatalf("defaults not applied as documented: %+v", s)
	}
	if s.Retry.SafeToRetry != nil {
		t.Fatalf("safeToRetry must stay unset so that POST/PATCH can require it explicitly")
	}
}

func TestValidationRejects(t *testing.T) {
	cases := map[string]struct {
		spec string
		want string
	}{
		"relative url":        {`{request: {url: '/v1/x'}, activeDeadlineSeconds: 60}`, "spec.request.url must be an absolute http:// or https:// URL"},
		"ftp url":             {`{request: {url: 'ftp://h/x'}, activeDeadlineSeconds: 60}`, "spec.request.url must be an absolute http:// or https:// URL"},
		"bad method":          {`{request: {url: 'http://h/', method: TRACE}, activeDeadlineSeconds: 60}`, "spec.request.method"},
		"maxAttempts 0":       {`{request: {url: 'http://h/'}, activeDeadlineSeconds: 60, retry: {maxAttempts: 0}}`, "spec.retry.maxAttempts"},
		"maxAttempts 101":     {`{request: {url: 'http://h/'}, activeDeadlineSeconds: 60, retry: {maxAttempts: 101}}`, "spec.retry.maxAttempts"},
		"timeout 0":           {`{request: {url: 'http://h/', timeoutSeconds: 0}, activeDeadlineSeconds: 60}`, "spec.request.timeoutSeconds"},
		"negative maxWait":    {`{request: {url: 'http://h/'}, activeDeadlineSeconds: 60, retry: {maxWaitSeconds: -1}}`, "spec.retry.maxWaitSeconds"},
		"fallback over wait":  {`{request: {url: 'http://h/'}, activeDeadlineSeconds: 60, retry: {maxWaitSeconds: 10, fallback: {maxDelaySeconds: 20}}}`, "spec.retry.fallback.maxDelaySeconds must be <= spec.retry.maxWaitSeconds"},
		"no deadline":         {`{request: {url: 'http://h/'}}`, "set exactly one of spec.deadline or spec.activeDeadlineSeconds"},
		"both deadlines":      {`{request: {url: 'http://h/'}, activeDeadlineSeconds: 60, deadline: '2030-01-01T00:00:00Z'}`, "set exactly one of spec.deadline or spec.activeDeadlineSeconds"},
		"POST without safe":   {`{request: {url: 'http://h/', method: POST}, activeDeadlineSeconds: 60}`, "spec.retry.safeToRetry must be set explicitly for POST and PATCH"},
		"PATCH without safe":  {`{request: {url: 'http://h/', method: PATCH}, activeDeadlineSeconds: 60, retry: {maxAttempts: 2}}`, "spec.retry.safeToRetry must be set explicitly for POST and PATCH"},
		"header both":         {`{request: {url: 'http://h/', headers: [{name: A, value: x, valueFrom: {secretKeyRef: {name: s, key: k}}}]}, activeDeadlineSeconds: 60}`, "a header needs exactly one of value and valueFrom"},
		"header neither":      {`{request: {url: 'http://h/', headers: [{name: A}]}, activeDeadlineSeconds: 60}`, "a header needs exactly one of value and valueFrom"},
		"header not a token":  {`{request: {url: 'http://h/', headers: [{name: 'Bad Name', value: x}]}, activeDeadlineSeconds: 60}`, "spec.request.headers[0].name"},
		"Host header":         {`{request: {url: 'http://h/', headers: [{name: host, value: x}]}, activeDeadlineSeconds: 60}`, "header name must not be Host, Content-Length"},
		"Content-Length":      {`{request: {url: 'http://h/', headers: [{name: Content-Length, value: '1'}]}, activeDeadlineSeconds: 60}`, "header name must not be Host, Content-Length"},
		"body and bodyFrom":   {`{request: {url: 'http://h/', method: PUT, body: x, bodyFrom: {configMapKeyRef: {name: c, key: k}}}, activeDeadlineSeconds: 60}`, "set at most one of spec.request.body and spec.request.bodyFrom"},
		"body too large":      {`{request: {url: 'http://h/', method: PUT, body: '` + strings.Repeat("x", 262145) + `'}, activeDeadlineSeconds: 60}`, "spec.request.body"},
		"response both":       {`{request: {url: 'http://h/'}, activeDeadlineSeconds: 60, response: {secretName: a, configMapName: b}}`, "spec.response needs exactly one of secretName and configMapName"},
		"response neither":    {`{request: {url: 'http://h/'}, activeDeadlineSeconds: 60, response: {maxBodyBytes: 10}}`, "spec.response needs exactly one of secretName and configMapName"},
		"resend without key":  {`{request: {url: 'http://h/'}, activeDeadlineSeconds: 60, onUnknownOutcome: {policy: ResendWithIdempotencyKey}}`, "ResendWithIdempotencyKey requires spec.idempotencyKey"},
		"statuscheck no url":  {`{request: {url: 'http://h/'}, activeDeadlineSeconds: 60, onUnknownOutcome: {policy: StatusCheck}}`, "statusCheck is required when policy is StatusCheck"},
		"escalate on unknown": {`{request: {url: 'http://h/'}, activeDeadlineSeconds: 60, retry: {escalateOn: [Tuesday]}}`, "spec.retry.escalateOn[0]"},
		"retryOn 404":         {`{request: {url: 'http://h/'}, activeDeadlineSeconds: 60, retry: {retryOn: [404]}}`, "spec.retry.retryOn accepts only 429 and 5xx"},
		"bad resolution":      {`{request: {url: 'http://h/'}, activeDeadlineSeconds: 60, resolution: {action: Ignore}}`, "spec.resolution.action"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := apply(t, base+"spec: "+tc.spec)
			if err == nil {
				t.Fatalf("accepted; want rejection mentioning %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("rejection does not name the problem:\n got: %v\nwant: %q", err, tc.want)
			}
		})
	}
}

func TestSpecImmutableExceptResolution(t *testing.T) {
	ctx := context.Background()
	rt := &v1alpha1.RetryTask{}
	if err := yaml.Unmarshal([]byte(base+"spec: {request: {url: 'http://127.0.0.1:1/x'}, activeDeadlineSeconds: 60}"), rt); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, rt); err != nil {
		t.Fatal(err)
	}
	mutations := map[string]struct {
		mutate func(*v1alpha1.RetryTask)
		want   string
	}{
		"url":      {func(r *v1alpha1.RetryTask) { r.Spec.Request.URL = "http://127.0.0.1:2/y" }, "spec.request is immutable"},
		"attempts": {func(r *v1alpha1.RetryTask) { r.Spec.Retry.MaxAttempts = 9 }, "spec.retry is immutable"},
		"deadline": {func(r *v1alpha1.RetryTask) { d := int64(6000); r.Spec.ActiveDeadlineSeconds = &d }, "a deadline is never extended"},
		"queue":    {func(r *v1alpha1.RetryTask) { q := "q"; r.Spec.Queue = &q }, "spec.queue is immutable"},
		"key":      {func(r *v1alpha1.RetryTask) { k := "k"; r.Spec.IdempotencyKey = &k }, "spec.idempotencyKey and spec.idempotencyKeyHeader are immutable"},
	}
	for name, tc := range mutations {
		t.Run(name, func(t *testing.T) {
			cp := rt.DeepCopy()
			tc.mutate(cp)
			err := env.Client.Update(ctx, cp)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want rejection %q", err, tc.want)
			}
		})
	}
	cp := rt.DeepCopy()
	cp.Spec.Resolution = &v1alpha1.Resolution{Action: v1alpha1.ResolutionAbandon, Note: "no longer needed"}
	if err := env.Client.Update(ctx, cp); err != nil {
		t.Fatalf("spec.resolution must stay mutable: %v", err)
	}
}

// status.phase is a selectable field: `kubectl get rt --field-selector
// status.phase=Escalated` lists the tasks that need a human.
func TestPhaseIsSelectable(t *testing.T) {
	ctx := context.Background()
	for _, phase := range []v1alpha1.Phase{v1alpha1.PhaseEscalated, v1alpha1.PhaseSucceeded} {
		rt := &v1alpha1.RetryTask{}
		if err := yaml.Unmarshal([]byte(base+"spec: {request: {url: 'http://127.0.0.1:1/x'}, activeDeadlineSeconds: 60}"), rt); err != nil {
			t.Fatal(err)
		}
		rt.Namespace = "kube-public"
		if err := env.Client.Create(ctx, rt); err != nil {
			t.Fatal(err)
		}
		rt.Status.Phase = phase
		if err := env.Client.Status().Update(ctx, rt); err != nil {
			t.Fatal(err)
		}
	}
	var list v1alpha1.RetryTaskList
	if err := env.Client.List(ctx, &list, client.InNamespace("kube-public"), client.MatchingFields{"status.phase": "Escalated"}); err != nil {
		t.Fatalf("field selector on status.phase: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].Status.Phase != v1alpha1.PhaseEscalated {
		t.Fatalf("selected %d tasks: %+v", len(list.Items), list.Items)
	}
}
