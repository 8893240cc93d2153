package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/retry-operator/retry-operator/internal/testenv"
)

// samplesBaseURL is where the samples point: the demo API's default address.
const samplesBaseURL = "http://127.0.0.1:8099"

// applySamples copies config/samples into dir with every URL pointed at
// apiURL, applies the copy with `kubectl apply -k`, and returns the
// RetryTasks it created.
func applySamples(ctx context.Context, k kubectl, dir, apiURL string) ([]types.NamespacedName, error) {
	src := filepath.Join(testenv.RepoRoot(), "config", "samples")
	dst := filepath.Join(dir, "samples")
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return nil, err
	}
	kust, err := os.ReadFile(filepath.Join(src, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var kustomization struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(kust, &kustomization); err != nil {
		return nil, fmt.Errorf("config/samples/kustomization.yaml: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dst, "kustomization.yaml"), kust, 0o600); err != nil {
		return nil, err
	}
	var tasks []types.NamespacedName
	for _, name := range kustomization.Resources {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return nil, err
		}
		data = bytes.ReplaceAll(data, []byte(samplesBaseURL), []byte(apiURL))
		if err := os.WriteFile(filepath.Join(dst, name), data, 0o600); err != nil {
			return nil, err
		}
		found, err := retryTasksIn(data)
		if err != nil {
			return nil, fmt.Errorf("config/samples/%s: %w", name, err)
		}
		tasks = append(tasks, found...)
	}
	if len(tasks) == 0 {
		return nil, errors.New("config/samples holds no RetryTask")
	}
	return tasks, k.run(ctx, "apply", "-k", dst)
}

// retryTasksIn names the RetryTasks in a YAML stream.
func retryTasksIn(data []byte) ([]types.NamespacedName, error) {
	var names []types.NamespacedName
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return names, nil
			}
			return nil, err
		}
		if u.GetKind() != testenv.RetryTaskGVK.Kind || !strings.HasPrefix(u.GetAPIVersion(), testenv.RetryTaskGVK.Group+"/") {
			continue
		}
		ns := u.GetNamespace()
		if ns == "" {
			ns = "default"
		}
		names = append(names, types.NamespacedName{Namespace: ns, Name: u.GetName()})
	}
}
