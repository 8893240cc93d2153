package controller_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/testenv"
)

// The manager runs as a user bound to exactly the generated ClusterRole, so a
// missing permission fails here rather than in a cluster. The task reads its
// Authorization header from a Secret; the token must reach the server and
// nothing else: no status, Event or log line (I7).
func TestLeastPrivilegeAndNoSecretsOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t)
	const token = "Bearer sk-test-7f3a9c1e5b"

	cfg := boundUser(t, "retry-operator-"+ns)
	var gotAuth string
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("X-Request-Id", "req-9")
		_, _ = w.Write([]byte(`{"answer":42}`))
	})
	create(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "llm-api", Namespace: ns},
		StringData: map[string]string{"authorization": token},
	})
	startManager(t, ns, managerOpts{config: cfg})
	create(t, task(ns, "secret", srv.URL+path("secret"), func(rt *v1alpha1.RetryTask) {
		rt.Spec.Request.Method = http.MethodPost
		rt.Spec.Request.Body = ptr.To(`{"q":"hi"}`)
		rt.Spec.Request.Headers = []v1alpha1.Header{
			{Name: "Content-Type", Value: ptr.To("application/json")},
			{Name: "Authorization", ValueFrom: &v1alpha1.ValueSource{
				SecretKeyRef: &v1alpha1.KeySelector{Name: "llm-api", Key: "authorization"}}},
		}
		rt.Spec.IdempotencyKey = ptr.To("secret-1")
		rt.Spec.Retry = &v1alpha1.RetryPolicy{SafeToRetry: ptr.To(true)}
		rt.Spec.Response = &v1alpha1.ResponseTarget{SecretName: ptr.To("secret-result"), MaxBodyBytes: 4096,
			KeepHeaders: []string{"X-Request-Id"}}
	}))
	rt := waitFor(t, ns, "secret", 30*time.Second, "Succeeded", inPhase(v1alpha1.PhaseSucceeded))
	if gotAuth != token {
		t.Fatalf("the server got Authorization %q, want the Secret's value", gotAuth)
	}
	result := &corev1.Secret{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "secret-result"}, result); err != nil {
		t.Fatalf("response secret, written as the least-privilege user: %v", err)
	}

	status, _ := json.Marshal(rt.Status)
	var evs eventsv1.EventList
	if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) == 0 {
		t.Fatal("no Events were recorded: the check below would prove nothing")
	}
	events, _ := json.Marshal(evs.Items)
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var exposed strings.Builder
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "retryoperator_") {
			exposed.WriteString(f.String())
		}
	}
	if !strings.Contains(exposed.String(), "retryoperator_attempts_total") {
		t.Fatal("no retryoperator_ metrics were exposed: the check below would prove nothing")
	}
	for where, text := range map[string]string{"status": string(status), "events": string(events), "logs": logs.String(), "metrics": exposed.String()} {
		if strings.Contains(text, "sk-test-7f3a9c1e5b") {
			t.Errorf("the Secret's value leaked into %s", where)
		}
	}
}

// boundUser provisions a user bound to config/rbac/role.yaml and returns its config.
func boundUser(t *testing.T, name string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(raw, role); err != nil {
		t.Fatal(err)
	}
	role.Name = name
	create(t, role)
	create(t, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}},
	})
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, role)
	})
	user, err := env.AddUser(envtest.User{Name: name}, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	cfg := user.Config()
	cfg.QPS, cfg.Burst = env.Config.QPS, env.Config.Burst
	return cfg
}
