package testenv

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
)

// StatusWrite wraps every RetryTask status update a test manager makes:
// update performs it. Tests count, time or fail writes with it.
type StatusWrite func(task *v1alpha1.RetryTask, update func() error) error

// ManagerOptions are manager options for tests and benchmarks: only ns is
// cached, so several managers can share the control plane; no listeners;
// controller names may repeat; every RetryTask status write goes through hook
// (nil: none).
func (e *Env) ManagerOptions(ns string, log logr.Logger, hook StatusWrite) ctrl.Options {
	return ctrl.Options{
		Scheme:                 e.Scheme,
		Logger:                 log,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient: func(cfg *rest.Config, opts client.Options) (client.Client, error) {
			c, err := client.NewWithWatch(cfg, opts)
			if err != nil || hook == nil {
				return c, err
			}
			return interceptor.NewClient(c, interceptor.Funcs{
				SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
					update := func() error { return c.SubResource(sub).Update(ctx, obj, opts...) }
					if rt, ok := obj.(*v1alpha1.RetryTask); ok && sub == "status" {
						return hook(rt, update)
					}
					return update()
				},
			}), nil
		},
	}
}
