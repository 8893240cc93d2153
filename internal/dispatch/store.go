package dispatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
)

// Keys of the stored response. A kept header X-Request-Id is stored under
// "header.X-Request-Id" (canonical name; a character a key may not hold becomes
// "_"), its values joined with ", ". A kept header absent from the response has no
// key.
const (
	KeyBody         = "body"
	KeyStatus       = "status"
	HeaderKeyPrefix = "header."
)

// ErrNotOwned marks a Secret or ConfigMap named in spec.response that exists and
// is not controlled by the task: it is never overwritten.
var ErrNotOwned = errors.New("response object is not controlled by the task")

// NotOwnedError names the object that is in the way. It matches ErrNotOwned.
type NotOwnedError struct {
	Kind, Namespace, Name, Task string
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("%s %s/%s exists and is not controlled by RetryTask %q: refusing to overwrite it (delete it, or name another object in spec.response)",
		e.Kind, e.Namespace, e.Name, e.Task)
}

// Is makes errors.Is(err, ErrNotOwned) true.
func (e *NotOwnedError) Is(target error) bool { return target == ErrNotOwned }

// MaxBody is the body bound to pass to Send for this task: spec.response's
// maxBodyBytes, or -1 (body not read) when the task keeps no response.
func MaxBody(task *v1alpha1.RetryTask) int64 {
	if task.Spec.Response == nil {
		return -1
	}
	return task.Spec.Response.MaxBodyBytes
}

// Store keeps a successful response in the Secret or ConfigMap named in
// spec.response: the body, the status code and the headers listed in keepHeaders.
// The object is created with the task as its controller owner; if it exists it
// is read through r (uncached: Secrets are not watched) and updated only when the
// task controls it, otherwise the error matches ErrNotOwned. Store does nothing
// when spec.response is not set, and refuses a result whose body is incomplete.
func Store(ctx context.Context, c client.Client, r client.Reader, scheme *runtime.Scheme, task *v1alpha1.RetryTask, res Result) error {
	target := task.Spec.Response
	if target == nil {
		return nil
	}
	if res.BodyTooLarge {
		return errors.New("the response body is larger than spec.response.maxBodyBytes; nothing stored")
	}
	if res.BodyErr != nil {
		return errors.New("the response body was not read completely; nothing stored")
	}
	meta := metav1.ObjectMeta{Namespace: task.Namespace}
	fields := responseFields(target.KeepHeaders, res)
	switch {
	case target.SecretName != nil:
		meta.Name = *target.SecretName
		want := &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}}
		for k, v := range fields {
			want.Data[k] = []byte(v)
		}
		want.Data[KeyBody] = res.Body
		return createOrUpdate(ctx, c, r, scheme, task, "Secret", want, &corev1.Secret{},
			func(have *corev1.Secret) bool {
				if maps.EqualFunc(have.Data, want.Data, bytes.Equal) {
					return false
				}
				have.Data = want.Data
				return true
			})
	case target.ConfigMapName != nil:
		meta.Name = *target.ConfigMapName
		want := &corev1.ConfigMap{ObjectMeta: meta, Data: fields}
		if utf8.Valid(res.Body) {
			want.Data[KeyBody] = string(res.Body)
		} else {
			want.BinaryData = map[string][]byte{KeyBody: res.Body}
		}
		return createOrUpdate(ctx, c, r, scheme, task, "ConfigMap", want, &corev1.ConfigMap{},
			func(have *corev1.ConfigMap) bool {
				if maps.Equal(have.Data, want.Data) && maps.EqualFunc(have.BinaryData, want.BinaryData, bytes.Equal) {
					return false
				}
				have.Data, have.BinaryData = want.Data, want.BinaryData
				return true
			})
	}
	return fmt.Errorf("%w: spec.response names neither a Secret nor a ConfigMap", ErrInvalid)
}

// createOrUpdate creates want, owned by task; when it exists, it reads it into
// have through r and, if the task controls it, lets update copy the data over and
// writes it back (with its resourceVersion: a conflict is returned, not forced).
func createOrUpdate[T client.Object](ctx context.Context, c client.Client, r client.Reader, scheme *runtime.Scheme,
	task *v1alpha1.RetryTask, kind string, want, have T, update func(T) bool) error {
	if err := controllerutil.SetControllerReference(task, want, scheme); err != nil {
		return fmt.Errorf("owning %s %s/%s: %w", kind, want.GetNamespace(), want.GetName(), err)
	}
	err := c.Create(ctx, want)
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating %s %s/%s: %w", kind, want.GetNamespace(), want.GetName(), err)
		}
		return nil
	}
	if err := r.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
		return fmt.Errorf("reading %s %s/%s: %w", kind, want.GetNamespace(), want.GetName(), err)
	}
	if !metav1.IsControlledBy(have, task) {
		return &NotOwnedError{Kind: kind, Namespace: want.GetNamespace(), Name: want.GetName(), Task: task.Name}
	}
	if !update(have) {
		return nil
	}
	if err := c.Update(ctx, have); err != nil {
		return fmt.Errorf("updating %s %s/%s: %w", kind, want.GetNamespace(), want.GetName(), err)
	}
	return nil
}

// responseFields holds the status and the kept headers, as strings.
func responseFields(keep []string, res Result) map[string]string {
	f := map[string]string{KeyStatus: strconv.Itoa(res.StatusCode)}
	for _, name := range keep {
		if vs := res.Header.Values(name); len(vs) > 0 {
			f[HeaderKey(name)] = strings.Join(vs, ", ")
		}
	}
	return f
}

// HeaderKey is the data key that holds a kept header: "header." and the
// canonical header name, each character outside [-._a-zA-Z0-9] replaced by "_".
func HeaderKey(name string) string {
	return HeaderKeyPrefix + strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			return r
		}
		return '_'
	}, http.CanonicalHeaderKey(name))
}
