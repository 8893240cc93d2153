// Package testenv starts a real kube-apiserver and etcd (envtest) with the
// project's CRDs installed, for tests that check API behaviour.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
)

// Env is a running control plane.
type Env struct {
	*envtest.Environment
	Config *rest.Config
	Client client.Client
	Scheme *k8sruntime.Scheme
}

// RepoRoot is the module root, found from this file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Assets returns the folder holding kube-apiserver, etcd and kubectl: the
// KUBEBUILDER_ASSETS variable, or else the newest build under bin/k8s/.
func Assets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, checkAssets(dir)
	}
	built, _ := filepath.Glob(filepath.Join(RepoRoot(), "bin", "k8s", "*", ".stamp"))
	sort.Strings(built)
	if len(built) == 0 {
		return "", errors.New("no control-plane binaries: run `make test` (it builds them), or `make controlplane` " +
			"and set KUBEBUILDER_ASSETS=bin/k8s/<version>")
	}
	dir := filepath.Dir(built[len(built)-1])
	return dir, checkAssets(dir)
}

func checkAssets(dir string) error {
	for _, name := range []string{"kube-apiserver", "etcd", "kubectl"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("control-plane binary %s missing in %s: run `make controlplane` to build it", name, dir)
		}
	}
	return nil
}

// Scheme returns a scheme with the built-in types and this project's API.
func Scheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// Start starts etcd and kube-apiserver on loopback and installs the CRDs from
// config/crd/bases. Callers must Stop it.
func Start() (*Env, error) {
	assets, err := Assets()
	if err != nil {
		return nil, err
	}
	scheme := Scheme()
	te := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	// Tests create many objects quickly; the default client limits would make
	// the client, not the operator, the bottleneck.
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = te.Stop()
		return nil, err
	}
	return &Env{Environment: te, Config: cfg, Client: c, Scheme: scheme}, nil
}

// GVK of a RetryTask, for messages and dynamic clients.
var RetryTaskGVK = schema.GroupVersionKind{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Kind: "RetryTask"}
