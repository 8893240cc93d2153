package dispatch

import (
	"errors"
	"maps"
	"net/http"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/planner"
)

// The fake client stands in for the API server here: these tests check what
// Store writes and when it refuses, not API server behaviour.

func okResult(body string) Result {
	return Result{Outcome: planner.Response, StatusCode: 200, Body: []byte(body), Header: http.Header{
		"X-Request-Id": {"req_1"},
		"X-Multi":      {"a", "b"},
		"Set-Cookie":   {"not-kept"},
	}}
}

func storingTask(target v1alpha1.ResponseTarget) *v1alpha1.RetryTask {
	target.MaxBodyBytes = 1024
	target.KeepHeaders = []string{"x-request-id", "X-Multi", "X-Absent", "X!Odd"}
	return task(v1alpha1.RetryTaskSpec{Request: v1alpha1.RequestSpec{URL: "https://api.example.com/"}, Response: &target})
}

func newStoreClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	return fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).Build()
}

func assertOwned(t *testing.T, obj metav1.Object, tk *v1alpha1.RetryTask) {
	t.Helper()
	refs := obj.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != tk.UID || refs[0].Kind != "RetryTask" || refs[0].Name != tk.Name || !ptr.Deref(refs[0].Controller, false) {
		t.Errorf("owner references %+v; want the task as controller", refs)
	}
}

func TestStoreCreatesAnOwnedSecret(t *testing.T) {
	tk := storingTask(v1alpha1.ResponseTarget{SecretName: ptr.To("summarize-result")})
	c := newStoreClient(t)

	if err := Store(t.Context(), c, c, testScheme(t), tk, okResult(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}

	got := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "summarize-result"}, got); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{
		"body":                []byte(`{"ok":true}`),
		"status":              []byte("200"),
		"header.X-Request-Id": []byte("req_1"),
		"header.X-Multi":      []byte("a, b"),
	}
	if !maps.EqualFunc(got.Data, want, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Errorf("data %q, want %q", got.Data, want)
	}
	if got.Type != corev1.SecretTypeOpaque {
		t.Errorf("type %q", got.Type)
	}
	assertOwned(t, got, tk)
}

func TestStoreConfigMapKeepsTextAsDataAndBytesAsBinaryData(t *testing.T) {
	tk := storingTask(v1alpha1.ResponseTarget{ConfigMapName: ptr.To("summarize-result")})
	c := newStoreClient(t)
	key := client.ObjectKey{Namespace: ns, Name: "summarize-result"}

	if err := Store(t.Context(), c, c, testScheme(t), tk, okResult("héllo")); err != nil {
		t.Fatal(err)
	}
	got := &corev1.ConfigMap{}
	if err := c.Get(t.Context(), key, got); err != nil {
		t.Fatal(err)
	}
	wantData := map[string]string{"body": "héllo", "status": "200", "header.X-Request-Id": "req_1", "header.X-Multi": "a, b"}
	if !maps.Equal(got.Data, wantData) || len(got.BinaryData) != 0 {
		t.Errorf("data %q, binaryData %q; want %q and none", got.Data, got.BinaryData, wantData)
	}
	assertOwned(t, got, tk)

	// A later attempt's binary body replaces it: the text key goes.
	if err := Store(t.Context(), c, c, testScheme(t), tk, okResult("\xff\xfe")); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), key, got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Data["body"]; ok || string(got.BinaryData["body"]) != "\xff\xfe" {
		t.Errorf("data %q, binaryData %q; want the body in binaryData only", got.Data, got.BinaryData)
	}
}

func TestStoreUpdatesTheTasksOwnSecret(t *testing.T) {
	tk := storingTask(v1alpha1.ResponseTarget{SecretName: ptr.To("summarize-result")})
	c := newStoreClient(t)
	key := client.ObjectKey{Namespace: ns, Name: "summarize-result"}
	if err := Store(t.Context(), c, c, testScheme(t), tk, okResult("first")); err != nil {
		t.Fatal(err)
	}
	second := okResult("second")
	second.Header.Del("X-Multi")

	if err := Store(t.Context(), c, c, testScheme(t), tk, second); err != nil {
		t.Fatal(err)
	}

	got := &corev1.Secret{}
	if err := c.Get(t.Context(), key, got); err != nil {
		t.Fatal(err)
	}
	if string(got.Data["body"]) != "second" {
		t.Errorf("body %q, want the second one", got.Data["body"])
	}
	if _, ok := got.Data["header.X-Multi"]; ok {
		t.Error("a header absent from the new response is still stored")
	}
	assertOwned(t, got, tk)
}

func TestStoreNeverOverwritesAnObjectItDoesNotControl(t *testing.T) {
	other := &metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "RetryTask", Name: "summarize-doc-42", UID: "uid-of-an-older-task", Controller: ptr.To(true)}
	for name, owner := range map[string]*metav1.OwnerReference{"user's own": nil, "another task's, same name": other} {
		t.Run(name, func(t *testing.T) {
			mine := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-config"}, Data: map[string][]byte{"password": []byte("keep-me")}}
			if owner != nil {
				mine.OwnerReferences = []metav1.OwnerReference{*owner}
			}
			c := newStoreClient(t, mine)
			tk := storingTask(v1alpha1.ResponseTarget{SecretName: ptr.To("app-config")})

			err := Store(t.Context(), c, c, testScheme(t), tk, okResult("x"))

			if !errors.Is(err, ErrNotOwned) {
				t.Fatalf("err %v, want ErrNotOwned", err)
			}
			for _, want := range []string{"Secret team-a/app-config", `RetryTask "summarize-doc-42"`, "refusing to overwrite"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err %q does not say %q", err, want)
				}
			}
			got := &corev1.Secret{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(mine), got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Data, mine.Data) || !reflect.DeepEqual(got.OwnerReferences, mine.OwnerReferences) {
				t.Errorf("the object changed: %+v", got)
			}
		})
	}
}

func TestStoreWritesNothing(t *testing.T) {
	tooLarge := okResult("")
	tooLarge.Body, tooLarge.BodyTooLarge = nil, true
	broken := okResult("")
	broken.Body, broken.BodyErr = nil, errors.New("unexpected EOF")
	cases := map[string]struct {
		task    *v1alpha1.RetryTask
		res     Result
		wantErr bool
	}{
		"no spec.response":      {task: task(v1alpha1.RetryTaskSpec{}), res: okResult("x")},
		"body over the bound":   {task: storingTask(v1alpha1.ResponseTarget{SecretName: ptr.To("r")}), res: tooLarge, wantErr: true},
		"body not read in full": {task: storingTask(v1alpha1.ResponseTarget{ConfigMapName: ptr.To("r")}), res: broken, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newStoreClient(t)
			err := Store(t.Context(), c, c, testScheme(t), tc.task, tc.res)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %t", err, tc.wantErr)
			}
			secrets, cms := &corev1.SecretList{}, &corev1.ConfigMapList{}
			if err := c.List(t.Context(), secrets); err != nil {
				t.Fatal(err)
			}
			if err := c.List(t.Context(), cms); err != nil {
				t.Fatal(err)
			}
			if len(secrets.Items)+len(cms.Items) != 0 {
				t.Errorf("%d Secrets and %d ConfigMaps written, want none", len(secrets.Items), len(cms.Items))
			}
		})
	}
}

func TestHeaderKeyIsAValidKey(t *testing.T) {
	cases := map[string]string{
		"x-request-id": "header.X-Request-Id",
		"Request-Id":   "header.Request-Id",
		"X!Odd":        "header.X_odd",
		"a.b_c":        "header.A.b_c",
		"!#$%&'*+^|~":  "header.___________",
	}
	for name, want := range cases {
		got := HeaderKey(name)
		if got != want {
			t.Errorf("HeaderKey(%q) = %q, want %q", name, got, want)
		}
		if errs := validation.IsConfigMapKey(got); len(errs) != 0 {
			t.Errorf("HeaderKey(%q) = %q is not a valid key: %v", name, got, errs)
		}
	}
}

func TestMaxBody(t *testing.T) {
	if got := MaxBody(task(v1alpha1.RetryTaskSpec{})); got != -1 {
		t.Errorf("no spec.response: %d, want -1", got)
	}
	tk := storingTask(v1alpha1.ResponseTarget{SecretName: ptr.To("r")})
	if got := MaxBody(tk); got != 1024 {
		t.Errorf("%d, want 1024", got)
	}
}
