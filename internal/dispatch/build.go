package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
)

// Defaults applied when the spec leaves a field unset (the API server normally
// fills them in; a task built in memory may not have them).
const (
	DefaultMethod               = http.MethodGet
	DefaultTimeout              = 30 * time.Second
	DefaultIdempotencyKeyHeader = "Idempotency-Key"
)

// ErrSource marks a request that cannot be built because a Secret or ConfigMap it
// references, or the key in it, does not exist or holds a value that cannot be
// sent. It is the user's to fix; errors.Is(err, ErrSource) tells it apart from a
// failed read (API server unreachable, forbidden), which is worth trying again.
var ErrSource = errors.New("request source unavailable")

// ErrInvalid marks a spec that cannot make a request at all (a bad URL, a header
// value with control characters). The API schema rejects most of these.
var ErrInvalid = errors.New("invalid request spec")

// SourceError says which Secret or ConfigMap key could not be used, and why. It
// names the field, the object and the key, never a value. It matches ErrSource.
type SourceError struct {
	// Field is the spec field that references the object, e.g.
	// "spec.request.headers[1].valueFrom".
	Field string
	// Kind is "secret" or "configmap".
	Kind string
	Name string
	// Key is empty when the object itself is missing.
	Key string
	// Problem is a short phrase, e.g. "not found" or "has no key".
	Problem string
	// Err is the API error behind a missing object, if any.
	Err error
}

func (e *SourceError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s: %s %q %s", e.Field, e.Kind, e.Name, e.Problem)
	}
	if e.Problem == problemNoKey {
		return fmt.Sprintf("%s: %s %q has no key %q", e.Field, e.Kind, e.Name, e.Key)
	}
	return fmt.Sprintf("%s: %s %q key %q %s", e.Field, e.Kind, e.Name, e.Key, e.Problem)
}

// Is makes errors.Is(err, ErrSource) true.
func (e *SourceError) Is(target error) bool { return target == ErrSource }

// Unwrap returns the API error, if any.
func (e *SourceError) Unwrap() error { return e.Err }

const (
	problemNotFound = "not found"
	problemNoKey    = "has no key"
	problemCTL      = "is not a valid header value: it contains control characters"
)

const (
	kindSecret    = "secret"
	kindConfigMap = "configmap"
)

// Build makes the request of one attempt from the task's spec. Header values and
// the body given by reference are read now, through r, from Secrets and
// ConfigMaps in the task's namespace (only get is used: the caller passes the
// manager's uncached API reader, so no Secret is listed, watched or cached), and
// they live only in the returned Request. Errors never contain a value.
func Build(ctx context.Context, r client.Reader, task *v1alpha1.RetryTask) (Request, error) {
	spec := &task.Spec.Request
	res := newResolver(r, task.Namespace)
	req, err := base(ctx, res, task, spec.URL, "spec.request.url")
	if err != nil {
		return Request{}, err
	}
	req.Method = spec.Method
	if req.Method == "" {
		req.Method = DefaultMethod
	}
	switch {
	case spec.Body != nil:
		req.Body = []byte(*spec.Body)
	case spec.BodyFrom != nil:
		b, err := res.value(ctx, "spec.request.bodyFrom", spec.BodyFrom)
		if err != nil {
			return Request{}, err
		}
		req.Body = b
	}
	return req, nil
}

// BuildStatusCheck makes the probe of spec.onUnknownOutcome.statusCheck: a GET to
// its url with the request's headers (without Content-Type) and the idempotency
// key, no body, and the request's timeout. The request body is not read.
func BuildStatusCheck(ctx context.Context, r client.Reader, task *v1alpha1.RetryTask) (Request, error) {
	u := task.Spec.OnUnknownOutcome
	if u == nil || u.StatusCheck == nil {
		return Request{}, fmt.Errorf("%w: spec.onUnknownOutcome.statusCheck is not set", ErrInvalid)
	}
	req, err := base(ctx, newResolver(r, task.Namespace), task, u.StatusCheck.URL, "spec.onUnknownOutcome.statusCheck.url")
	if err != nil {
		return Request{}, err
	}
	req.Method = http.MethodGet
	req.Header.Del("Content-Type")
	if !sameHost(u.StatusCheck.URL, task.Spec.Request.URL) {
		// Credentials never cross hosts, as Go's client does on a redirect:
		// secret-sourced headers and Authorization/Cookie stay with the
		// request's own host.
		for _, hd := range task.Spec.Request.Headers {
			if hd.ValueFrom != nil {
				req.Header.Del(hd.Name)
			}
		}
		req.Header.Del("Authorization")
		req.Header.Del("Cookie")
	}
	return req, nil
}

// sameHost compares the scheme, host and port of two URLs, case-insensitively:
// credentials for https never go out over http.
func sameHost(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	return errA == nil && errB == nil && strings.EqualFold(ua.Host, ub.Host) && strings.EqualFold(ua.Scheme, ub.Scheme)
}

// base resolves what the request and the status check share: URL, headers,
// idempotency key and timeout.
func base(ctx context.Context, res *resolver, task *v1alpha1.RetryTask, rawURL, urlField string) (Request, error) {
	if err := checkURL(rawURL); err != nil {
		return Request{}, fmt.Errorf("%w: %s %s", ErrInvalid, urlField, err)
	}
	spec := &task.Spec.Request
	h := make(http.Header, len(spec.Headers)+1)
	for i, hd := range spec.Headers {
		field := fmt.Sprintf("spec.request.headers[%d]", i)
		switch {
		case hd.Value != nil:
			v := strings.TrimSpace(*hd.Value)
			if !validHeaderValue(v) {
				return Request{}, fmt.Errorf("%w: %s.value (%s) %s", ErrInvalid, field, hd.Name, problemCTL)
			}
			h.Add(hd.Name, v)
		case hd.ValueFrom != nil:
			b, err := res.value(ctx, field+".valueFrom", hd.ValueFrom)
			if err != nil {
				return Request{}, err
			}
			// A value read from a file often ends with a newline (kubectl create
			// secret --from-file); surrounding whitespace is never part of a
			// field value (RFC 9110 5.5), so it is trimmed.
			v := strings.TrimSpace(string(b))
			if !validHeaderValue(v) {
				return Request{}, sourceErr(field+".valueFrom", hd.ValueFrom, problemCTL, nil)
			}
			h.Add(hd.Name, v)
		default:
			return Request{}, fmt.Errorf("%w: %s (%s) has neither value nor valueFrom", ErrInvalid, field, hd.Name)
		}
	}
	if k := task.Spec.IdempotencyKey; k != nil && *k != "" {
		name := DefaultIdempotencyKeyHeader
		if n := task.Spec.IdempotencyKeyHeader; n != nil && *n != "" {
			name = *n
		}
		if !validHeaderValue(*k) {
			return Request{}, fmt.Errorf("%w: spec.idempotencyKey %s", ErrInvalid, problemCTL)
		}
		// Set, not Add: the task's key wins over a header of the same name.
		h.Set(name, *k)
	}
	timeout := DefaultTimeout
	if s := spec.TimeoutSeconds; s != nil && *s > 0 {
		timeout = time.Duration(*s) * time.Second
	}
	return Request{URL: rawURL, Header: h, Timeout: timeout}, nil
}

// checkURL accepts absolute http and https URLs with a host. Its errors do not
// repeat the URL, which may carry credentials.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("is not a valid URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("must use http or https")
	}
	if u.Hostname() == "" {
		return errors.New("has no host")
	}
	return nil
}

// validHeaderValue rejects control characters other than horizontal tab
// (RFC 9110 5.5); a CR or LF would let a value inject header lines.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// resolver reads each referenced object at most once per build.
type resolver struct {
	r          client.Reader
	namespace  string
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap
}

func newResolver(r client.Reader, namespace string) *resolver {
	return &resolver{r: r, namespace: namespace,
		secrets: map[string]*corev1.Secret{}, configMaps: map[string]*corev1.ConfigMap{}}
}

func (res *resolver) value(ctx context.Context, field string, src *v1alpha1.ValueSource) ([]byte, error) {
	switch {
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, ok := res.secrets[ref.Name]
		if !ok {
			s = &corev1.Secret{}
			if err := res.get(ctx, field, kindSecret, ref.Name, s); err != nil {
				return nil, err
			}
			res.secrets[ref.Name] = s
		}
		if v, ok := s.Data[ref.Key]; ok {
			return v, nil
		}
		// stringData is write-only and merged into data by the API server; it
		// is read here only for objects that did not go through one.
		if v, ok := s.StringData[ref.Key]; ok {
			return []byte(v), nil
		}
		return nil, sourceErr(field, src, problemNoKey, nil)
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, ok := res.configMaps[ref.Name]
		if !ok {
			cm = &corev1.ConfigMap{}
			if err := res.get(ctx, field, kindConfigMap, ref.Name, cm); err != nil {
				return nil, err
			}
			res.configMaps[ref.Name] = cm
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return []byte(v), nil
		}
		if v, ok := cm.BinaryData[ref.Key]; ok {
			return v, nil
		}
		return nil, sourceErr(field, src, problemNoKey, nil)
	}
	return nil, fmt.Errorf("%w: %s has neither secretKeyRef nor configMapKeyRef", ErrInvalid, field)
}

func (res *resolver) get(ctx context.Context, field, kind, name string, obj client.Object) error {
	err := res.r.Get(ctx, types.NamespacedName{Namespace: res.namespace, Name: name}, obj)
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return &SourceError{Field: field, Kind: kind, Name: name, Problem: problemNotFound, Err: err}
	default:
		// Not ErrSource: the object may well exist; the read failed.
		return fmt.Errorf("%s: reading %s %q: %w", field, kind, name, err)
	}
}

func sourceErr(field string, src *v1alpha1.ValueSource, problem string, err error) *SourceError {
	e := &SourceError{Field: field, Problem: problem, Err: err}
	if src.SecretKeyRef != nil {
		e.Kind, e.Name, e.Key = kindSecret, src.SecretKeyRef.Name, src.SecretKeyRef.Key
	} else if src.ConfigMapKeyRef != nil {
		e.Kind, e.Name, e.Key = kindConfigMap, src.ConfigMapKeyRef.Name, src.ConfigMapKeyRef.Key
	}
	return e
}
