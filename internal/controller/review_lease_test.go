package controller_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
)

type slowSecrets struct {
	rt    http.RoundTripper
	delay time.Duration
}

func (s slowSecrets) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/secrets/") {
		time.Sleep(s.delay)
	}
	return s.rt.RoundTrip(r)
}

// The runner claims first and only then reads the Secrets the request needs
// (dispatch.Build), outside the attempt's timeout; the lease (claim + timeout +
// grace) does not cover that read. When the read is slow (a loaded API server),
// another replica sees the lease expire, records OutcomeUnknown, and the first
// replica still sends afterwards: a send after its lease, unknown to the task
// (I3/I5; under ResendWithIdempotencyKey two attempts are in flight at once).
func TestReviewSendAfterLeaseExpired(t *testing.T) {
	ns := namespace(t)
	srv := newAPI(t, func(n int, w http.ResponseWriter, r *http.Request) {})
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tok"},
		StringData: map[string]string{"authorization": "Bearer s3cr3t"}})
	slow := rest.CopyConfig(env.Config)
	slow.Wrap(func(rt http.RoundTripper) http.RoundTripper { return slowSecrets{rt: rt, delay: 4 * time.Second} })
	startManager(t, ns, managerOpts{config: slow, leaseGrace: time.Second})
	create(t, task(ns, "late", srv.URL+path("late"), func(rt *v1alpha1.RetryTask) {
		rt.Spec.Request.TimeoutSeconds = ptr.To[int32](1)
		rt.Spec.Request.Headers = []v1alpha1.Header{{Name: "Authorization", ValueFrom: &v1alpha1.ValueSource{
			SecretKeyRef: &v1alpha1.KeySelector{Name: "tok", Key: "authorization"}}}}
	}))
	rt := waitFor(t, ns, "late", 20*time.Second, "Succeeded", inPhase(v1alpha1.PhaseSucceeded))
	// The Secret is read before the claim, so the whole request fits in the
	// lease (claim + timeout 1s + grace 1s).
	sent := rt.Status.History[0].SentAt.Time
	for _, a := range srv.seen(path("late")) {
		if a.at.Sub(sent) > 2*time.Second {
			t.Fatalf("a request was sent %v after its claim, past the lease; task: %s", a.at.Sub(sent), describe(rt))
		}
	}
}
