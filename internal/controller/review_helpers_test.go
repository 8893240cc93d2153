package controller_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/controller"
)

// reviewOpts configures a manager for the review tests: fail, when set, is
// asked before every RetryTask status write and may return an error to inject
// (the write is then not made).
type reviewOpts struct {
	leaseGrace  time.Duration
	dispatchers int
	config      *rest.Config
	fail        func(rt *v1alpha1.RetryTask) error
}

func startReviewManager(t *testing.T, ns string, o reviewOpts) *manager {
	t.Helper()
	m := &manager{done: make(chan struct{})}
	cfg := o.config
	if cfg == nil {
		cfg = env.Config
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Logger:                 zap.New(zap.WriteTo(logs), zap.UseDevMode(true)),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient: func(cfg *rest.Config, opts client.Options) (client.Client, error) {
			c, err := client.NewWithWatch(cfg, opts)
			if err != nil {
				return nil, err
			}
			return interceptor.NewClient(c, interceptor.Funcs{
				SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
					if rt, ok := obj.(*v1alpha1.RetryTask); ok && sub == "status" {
						m.statusWrites.Add(1)
						if o.fail != nil {
							if err := o.fail(rt); err != nil {
								return err
							}
						}
					}
					return c.SubResource(sub).Update(ctx, obj, opts...)
				},
			}), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	grace := o.leaseGrace
	if grace == 0 {
		grace = time.Second
	}
	if _, err := controller.Setup(mgr, controller.Options{LeaseGrace: grace, Dispatchers: o.dispatchers}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(m.stop)
	return m
}

// unavailable is what a client sees while the API server is down or overloaded.
func unavailable() error {
	return errors.NewServiceUnavailable("injected: the API server is unavailable")
}
