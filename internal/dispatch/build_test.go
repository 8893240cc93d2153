package dispatch

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
)

// The fake client stands in for the API reader here: these tests check how Build
// uses what it reads, not any API server behaviour.

const ns = "team-a"

// Values that must never appear in an error.
var secretValues = []string{"Bearer s3cr3t-token", "s3cr3t-token", "other-secret-value", "line1", "line2", "cm-secretish-value", "body-from-secret"}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// getOnly counts Gets and refuses List: the dispatcher may only get objects.
type getOnly struct {
	r    client.Reader
	gets int
}

func (g *getOnly) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	g.gets++
	return g.r.Get(ctx, key, obj, opts...)
}

func (g *getOnly) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("List is not allowed: Secrets are read with get only")
}

func sources(t *testing.T) *getOnly {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llm-api"}, Data: map[string][]byte{
			"authorization": []byte("Bearer s3cr3t-token\n"), // as kubectl --from-file leaves it
			"other":         []byte("other-secret-value"),
			"multiline":     []byte("line1\nline2"),
			"body":          []byte("body-from-secret\n"),
		}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llm-conf"},
			Data:       map[string]string{"org": "org-42", "payload": `{"from":"configmap"}`, "odd": "cm-secretish-value\r\nX-Injected: 1"},
			BinaryData: map[string][]byte{"bin": []byte("binary-value")},
		},
		// Same names in another namespace: never read.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "only-elsewhere"}, Data: map[string][]byte{"k": []byte("v")}},
	).Build()
	return &getOnly{r: c}
}

func secretRef(name, key string) *v1alpha1.ValueSource {
	return &v1alpha1.ValueSource{SecretKeyRef: &v1alpha1.KeySelector{Name: name, Key: key}}
}

func configMapRef(name, key string) *v1alpha1.ValueSource {
	return &v1alpha1.ValueSource{ConfigMapKeyRef: &v1alpha1.KeySelector{Name: name, Key: key}}
}

func task(spec v1alpha1.RetryTaskSpec) *v1alpha1.RetryTask {
	return &v1alpha1.RetryTask{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "summarize-doc-42", UID: "uid-42"}, Spec: spec}
}

func TestBuild(t *testing.T) {
	cases := map[string]struct {
		spec     v1alpha1.RetryTaskSpec
		want     Request
		wantGets int
	}{
		"defaults: GET, 30s, no body": {
			spec: v1alpha1.RetryTaskSpec{Request: v1alpha1.RequestSpec{URL: "https://api.example.com/v1/models"}},
			want: Request{Method: "GET", URL: "https://api.example.com/v1/models", Header: http.Header{}, Timeout: 30 * time.Second},
		},
		"inline, Secret and ConfigMap headers, idempotency key, inline body": {
			spec: v1alpha1.RetryTaskSpec{
				Request: v1alpha1.RequestSpec{
					Method: "POST",
					URL:    "https://api.example.com/v1/chat/completions",
					Headers: []v1alpha1.Header{
						{Name: "Content-Type", Value: ptr.To("application/json")},
						{Name: "Authorization", ValueFrom: secretRef("llm-api", "authorization")},
						{Name: "X-Other", ValueFrom: secretRef("llm-api", "other")},
						{Name: "x-org", ValueFrom: configMapRef("llm-conf", "org")},
						{Name: "X-Bin", ValueFrom: configMapRef("llm-conf", "bin")},
						{Name: "X-Twice", Value: ptr.To("a")},
						{Name: "X-Twice", Value: ptr.To(" b ")},
					},
					Body:           ptr.To(`{"model":"m"}`),
					TimeoutSeconds: ptr.To[int32](5),
				},
				IdempotencyKey: ptr.To("summarize-doc-42"),
			},
			want: Request{Method: "POST", URL: "https://api.example.com/v1/chat/completions", Header: http.Header{
				"Content-Type":    {"application/json"},
				"Authorization":   {"Bearer s3cr3t-token"}, // the trailing newline is trimmed
				"X-Other":         {"other-secret-value"},
				"X-Org":           {"org-42"},
				"X-Bin":           {"binary-value"},
				"X-Twice":         {"a", "b"},
				"Idempotency-Key": {"summarize-doc-42"},
			}, Body: []byte(`{"model":"m"}`), Timeout: 5 * time.Second},
			wantGets: 2, // each object read once
		},
		"custom key header replaces a spec header of that name": {
			spec: v1alpha1.RetryTaskSpec{
				Request: v1alpha1.RequestSpec{Method: "PUT", URL: "http://api.example.com/x", Headers: []v1alpha1.Header{
					{Name: "X-Dedupe", Value: ptr.To("from-headers")},
				}},
				IdempotencyKey:       ptr.To("k-1"),
				IdempotencyKeyHeader: ptr.To("x-dedupe"),
			},
			want: Request{Method: "PUT", URL: "http://api.example.com/x", Header: http.Header{"X-Dedupe": {"k-1"}}, Timeout: 30 * time.Second},
		},
		"body from a Secret, verbatim": {
			spec:     v1alpha1.RetryTaskSpec{Request: v1alpha1.RequestSpec{Method: "POST", URL: "https://api.example.com/", BodyFrom: secretRef("llm-api", "body")}},
			want:     Request{Method: "POST", URL: "https://api.example.com/", Header: http.Header{}, Body: []byte("body-from-secret\n"), Timeout: 30 * time.Second},
			wantGets: 1,
		},
		"body from a ConfigMap": {
			spec:     v1alpha1.RetryTaskSpec{Request: v1alpha1.RequestSpec{Method: "PATCH", URL: "https://api.example.com/", BodyFrom: configMapRef("llm-conf", "payload")}},
			want:     Request{Method: "PATCH", URL: "https://api.example.com/", Header: http.Header{}, Body: []byte(`{"from":"configmap"}`), Timeout: 30 * time.Second},
			wantGets: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := sources(t)
			got, err := Build(t.Context(), r, task(tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %#v\nwant %#v", got, tc.want)
			}
			if r.gets != tc.wantGets {
				t.Errorf("%d gets, want %d", r.gets, tc.wantGets)
			}
		})
	}
}

func TestBuildErrorsNameTheSourceNotTheValue(t *testing.T) {
	cases := map[string]struct {
		spec      v1alpha1.RetryTaskSpec
		sentinel  error
		wantInErr []string
	}{
		"missing Secret": {
			spec: headerFrom(secretRef("llm-apj", "authorization")),
			// The object exists in another namespace only.
			sentinel: ErrSource, wantInErr: []string{`spec.request.headers[0].valueFrom: secret "llm-apj" not found`},
		},
		"Secret in another namespace": {
			spec:     headerFrom(secretRef("only-elsewhere", "k")),
			sentinel: ErrSource, wantInErr: []string{`secret "only-elsewhere" not found`},
		},
		"missing Secret key": {
			spec:     headerFrom(secretRef("llm-api", "authorisation")),
			sentinel: ErrSource, wantInErr: []string{`secret "llm-api" has no key "authorisation"`},
		},
		"missing ConfigMap": {
			spec:     headerFrom(configMapRef("llm-cfg", "org")),
			sentinel: ErrSource, wantInErr: []string{`configmap "llm-cfg" not found`},
		},
		"missing ConfigMap key": {
			spec:     headerFrom(configMapRef("llm-conf", "orgs")),
			sentinel: ErrSource, wantInErr: []string{`configmap "llm-conf" has no key "orgs"`},
		},
		"Secret value with a line break inside": {
			spec:     headerFrom(secretRef("llm-api", "multiline")),
			sentinel: ErrSource, wantInErr: []string{`secret "llm-api" key "multiline" is not a valid header value`},
		},
		"ConfigMap value that would inject a header": {
			spec:     headerFrom(configMapRef("llm-conf", "odd")),
			sentinel: ErrSource, wantInErr: []string{`configmap "llm-conf" key "odd" is not a valid header value`},
		},
		"body from a missing Secret key": {
			spec:     v1alpha1.RetryTaskSpec{Request: v1alpha1.RequestSpec{Method: "POST", URL: "https://api.example.com/", BodyFrom: secretRef("llm-api", "nobody")}},
			sentinel: ErrSource, wantInErr: []string{`spec.request.bodyFrom: secret "llm-api" has no key "nobody"`},
		},
		"inline value with a line break": {
			spec: v1alpha1.RetryTaskSpec{Request: v1alpha1.RequestSpec{URL: "https://api.example.com/", Headers: []v1alpha1.Header{
				{Name: "X-A", Value: ptr.To("line1\nline2")},
			}}},
			sentinel: ErrInvalid, wantInErr: []string{"spec.request.headers[0].value (X-A)"},
		},
		"URL with credentials that does not parse": {
			spec:     v1alpha1.RetryTaskSpec{Request: v1alpha1.RequestSpec{URL: "https://user:s3cr3t-token@api.example.com:port/"}},
			sentinel: ErrInvalid, wantInErr: []string{"spec.request.url is not a valid URL"},
		},
		"URL without http": {
			spec:     v1alpha1.RetryTaskSpec{Request: v1alpha1.RequestSpec{URL: "ftp://api.example.com/"}},
			sentinel: ErrInvalid, wantInErr: []string{"spec.request.url must use http or https"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Build(t.Context(), sources(t), task(tc.spec))
			if !errors.Is(err, tc.sentinel) {
				t.Fatalf("err %v; want one that matches %v", err, tc.sentinel)
			}
			if tc.sentinel == ErrInvalid && errors.Is(err, ErrSource) {
				t.Errorf("err %v matches ErrSource too", err)
			}
			for _, want := range tc.wantInErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err %q does not contain %q", err, want)
				}
			}
			for _, v := range secretValues {
				if strings.Contains(err.Error(), v) {
					t.Errorf("err %q contains the value %q", err, v)
				}
			}
		})
	}
}

// failingReader fails every read the way an unreachable API server does.
type failingReader struct{}

func (failingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("List is not allowed")
}

func (failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return apierrors.NewServiceUnavailable("etcdserver: request timed out")
}

func TestBuildReadFailureIsNotErrSource(t *testing.T) {
	_, err := Build(t.Context(), failingReader{}, task(headerFrom(secretRef("llm-api", "authorization"))))
	if err == nil || errors.Is(err, ErrSource) {
		t.Fatalf("err %v; want a read error that does not match ErrSource", err)
	}
	if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), `reading secret "llm-api"`) {
		t.Errorf("err %q: the API error is lost or the object is not named", err)
	}
}

func TestBuildStatusCheck(t *testing.T) {
	spec := v1alpha1.RetryTaskSpec{
		Request: v1alpha1.RequestSpec{
			Method: "POST",
			URL:    "https://api.example.com/v1/jobs",
			Headers: []v1alpha1.Header{
				{Name: "Content-Type", Value: ptr.To("application/json")},
				{Name: "Authorization", ValueFrom: secretRef("llm-api", "authorization")},
			},
			// The body's source is gone: a status check does not need it.
			BodyFrom:       secretRef("deleted-after-the-send", "body"),
			TimeoutSeconds: ptr.To[int32](7),
		},
		IdempotencyKey: ptr.To("job-7"),
		OnUnknownOutcome: &v1alpha1.UnknownOutcomePolicy{Policy: "StatusCheck", StatusCheck: &v1alpha1.StatusCheck{
			URL: "https://api.example.com/v1/jobs/by-key/job-7",
		}},
	}
	r := sources(t)

	got, err := BuildStatusCheck(t.Context(), r, task(spec))

	if err != nil {
		t.Fatal(err)
	}
	want := Request{Method: "GET", URL: "https://api.example.com/v1/jobs/by-key/job-7", Header: http.Header{
		"Authorization":   {"Bearer s3cr3t-token"},
		"Idempotency-Key": {"job-7"},
	}, Timeout: 7 * time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
	if r.gets != 1 {
		t.Errorf("%d gets, want 1 (the body is not read)", r.gets)
	}

	// Another host gets no credentials: neither the Secret-sourced header nor
	// Authorization/Cookie.
	spec.Request.Headers = append(spec.Request.Headers,
		v1alpha1.Header{Name: "Cookie", Value: ptr.To("session=1")},
		v1alpha1.Header{Name: "X-Team", Value: ptr.To("search")})
	spec.OnUnknownOutcome.StatusCheck.URL = "https://status.example.net/jobs/job-7"
	got, err = BuildStatusCheck(t.Context(), r, task(spec))
	if err != nil {
		t.Fatal(err)
	}
	if want := (http.Header{"Idempotency-Key": {"job-7"}, "X-Team": {"search"}}); !reflect.DeepEqual(got.Header, want) {
		t.Errorf("cross-host status check headers %v, want %v", got.Header, want)
	}

	// Nor does the same host over plain http when the request is https.
	spec.OnUnknownOutcome.StatusCheck.URL = "http://api.example.com/v1/jobs/by-key/job-7"
	if got, err = BuildStatusCheck(t.Context(), r, task(spec)); err != nil || got.Header.Get("Authorization") != "" {
		t.Errorf("https credentials sent over http: %v, %v", got.Header, err)
	}

	spec.OnUnknownOutcome.StatusCheck = nil
	if _, err := BuildStatusCheck(t.Context(), r, task(spec)); !errors.Is(err, ErrInvalid) {
		t.Errorf("without statusCheck: err %v, want ErrInvalid", err)
	}
}

func headerFrom(src *v1alpha1.ValueSource) v1alpha1.RetryTaskSpec {
	return v1alpha1.RetryTaskSpec{Request: v1alpha1.RequestSpec{
		URL:     "https://api.example.com/",
		Headers: []v1alpha1.Header{{Name: "Authorization", ValueFrom: src}},
	}}
}
