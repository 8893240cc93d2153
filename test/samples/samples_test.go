// Package samples_test proves that the manifests users apply by hand are
// accepted by a real kube-apiserver with the project's CRDs: every
// config/samples file, and the kustomize output of config/default.
package samples_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/testenv"
)

// demoBaseURL is the demo API's address: `make demo` rewrites it to wherever
// its API listens, and nothing answers on it in a cluster.
const demoBaseURL = "http://127.0.0.1:8099/"

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		os.Stderr.WriteString("starting the control plane: " + err.Error() + "\n")
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		os.Stderr.WriteString("stopping the control plane: " + err.Error() + "\n")
	}
	os.Exit(code)
}

func samplesDir() string { return filepath.Join(testenv.RepoRoot(), "config", "samples") }

// TestSamplesApply creates every object of every config/samples file with
// strict field validation, so a misspelt field fails here instead of being
// dropped silently.
func TestSamplesApply(t *testing.T) {
	ctx := context.Background()
	files, err := filepath.Glob(filepath.Join(samplesDir(), "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tasks := 0
	for _, file := range files {
		if filepath.Base(file) == "kustomization.yaml" {
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			for _, obj := range decodeFile(t, file) {
				if obj.GetNamespace() == "" {
					obj.SetNamespace("default")
				}
				if err := env.Client.Create(ctx, obj, client.FieldValidation("Strict")); err != nil {
					t.Fatalf("%s %s rejected: %v", obj.GetKind(), obj.GetName(), err)
				}
				if obj.GetKind() != "RetryTask" {
					continue
				}
				tasks++
				var task v1alpha1.RetryTask
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), &task); err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(task.Spec.Request.URL, demoBaseURL) {
					t.Errorf("RetryTask %s calls %s: samples must call the demo API under %s", task.Name, task.Spec.Request.URL, demoBaseURL)
				}
			}
		})
	}
	if tasks < 3 {
		t.Errorf("config/samples holds %d RetryTasks, want at least 3 (a GET, a POST, one with a queue)", tasks)
	}
}

// TestSamplesKustomization checks that config/samples/kustomization.yaml, which
// `kubectl apply -k` and `make demo` use, lists every sample file.
func TestSamplesKustomization(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(samplesDir(), "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		t.Fatalf("config/samples/kustomization.yaml: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(samplesDir(), "*.yaml"))
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			want = append(want, b)
		}
	}
	got := slices.Sorted(slices.Values(k.Resources))
	if !slices.Equal(got, want) {
		t.Errorf("config/samples/kustomization.yaml lists %v; the folder holds %v", got, want)
	}
}

// TestDefaultConfigApplies renders config/default with the kubectl built with
// the control plane, creates every object, and checks that the names the
// objects refer to each other by agree (the API server accepts dangling ones).
func TestDefaultConfigApplies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	assets, err := testenv.Assets()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(assets, "kubectl"), "kustomize", filepath.Join(testenv.RepoRoot(), "config", "default"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/default: %v\n%s", err, stderr.String())
	}
	objs := decode(t, "kustomize output", out)

	byKind := map[string][]*unstructured.Unstructured{}
	for _, obj := range objs {
		byKind[obj.GetKind()] = append(byKind[obj.GetKind()], obj)
		err := env.Client.Create(ctx, obj, client.FieldValidation("Strict"))
		if apierrors.IsAlreadyExists(err) && obj.GetKind() == "CustomResourceDefinition" {
			continue // installed by the test environment from the same file
		}
		if err != nil {
			t.Errorf("%s %s rejected: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	for _, kind := range []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole",
		"ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service"} {
		if len(byKind[kind]) == 0 {
			t.Errorf("config/default renders no %s", kind)
		}
	}
	crds, _ := filepath.Glob(filepath.Join(testenv.RepoRoot(), "config", "crd", "bases", "*.yaml"))
	if got := len(byKind["CustomResourceDefinition"]); got != len(crds) {
		t.Errorf("config/default renders %d CRDs; config/crd/bases holds %d: list every one in config/crd/kustomization.yaml", got, len(crds))
	}
	if t.Failed() {
		return
	}

	sa := byKind["ServiceAccount"][0]
	deploy := byKind["Deployment"][0]
	if got, _, _ := unstructured.NestedString(deploy.Object, "spec", "template", "spec", "serviceAccountName"); got != sa.GetName() {
		t.Errorf("the Deployment runs as ServiceAccount %q; config/default defines %q", got, sa.GetName())
	}
	if got, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas"); got < 2 {
		t.Errorf("the Deployment has %d replicas, want 2 with leader election", got)
	}
	containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 || !slices.Contains(argsOf(containers[0]), "--leader-elect") {
		t.Errorf("the manager container must run with --leader-elect")
	}
	checkBinding(t, byKind["ClusterRoleBinding"][0], byKind["ClusterRole"][0], sa)
	checkBinding(t, byKind["RoleBinding"][0], byKind["Role"][0], sa)
}

func argsOf(container any) []string {
	c, _ := container.(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	return args
}

// checkBinding asserts that binding grants role to sa.
func checkBinding(t *testing.T, binding, role, sa *unstructured.Unstructured) {
	t.Helper()
	if ref, _, _ := unstructured.NestedString(binding.Object, "roleRef", "name"); ref != role.GetName() {
		t.Errorf("%s %s refers to %q; config/default defines %s %q", binding.GetKind(), binding.GetName(), ref, role.GetKind(), role.GetName())
	}
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	for _, s := range subjects {
		m, _ := s.(map[string]any)
		if m["kind"] == "ServiceAccount" && m["name"] == sa.GetName() && m["namespace"] == sa.GetNamespace() {
			return
		}
	}
	t.Errorf("%s %s does not bind ServiceAccount %s/%s", binding.GetKind(), binding.GetName(), sa.GetNamespace(), sa.GetName())
}

func decodeFile(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	objs := decode(t, filepath.Base(file), data)
	if len(objs) == 0 {
		t.Fatalf("%s holds no object", file)
	}
	return objs
}

func decode(t *testing.T, what string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("%s: %v", what, err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}
