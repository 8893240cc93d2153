package controller_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

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
	mgr, err := ctrl.NewManager(cfg, env.ManagerOptions(ns, zap.New(zap.WriteTo(logs), zap.UseDevMode(true)),
		func(rt *v1alpha1.RetryTask, update func() error) error {
			m.statusWrites.Add(1)
			if o.fail != nil {
				if err := o.fail(rt); err != nil {
					return err
				}
			}
			return update()
		}))
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
