package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/retry-operator/retry-operator/internal/controller"
	"github.com/retry-operator/retry-operator/internal/testenv"
)

// logToFile sends controller-runtime's and client-go's logs to path, so that
// the terminal shows only the demo.
func logToFile(path string) (closeFn func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	logger := zap.New(zap.WriteTo(f), zap.ConsoleEncoder())
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	return func() { _ = f.Close() }, nil
}

// startManager runs the operator's manager in this process, as cmd/manager
// would with --metrics-bind-address=0 --health-probe-bind-address=0 and no
// leader election. The returned function stops it and waits for it.
func startManager(env *testenv.Env) (stop func(), err error) {
	mgr, err := ctrl.NewManager(rest.CopyConfig(env.Config), ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if _, err := controller.Setup(mgr, controller.Options{}); err != nil {
		return nil, fmt.Errorf("setting up the controllers: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		step("stopping the manager")
		cancel()
		select {
		case err := <-done:
			if err != nil {
				fmt.Fprintln(os.Stderr, "demo: manager:", err)
			}
		case <-time.After(30 * time.Second):
			fmt.Fprintln(os.Stderr, "demo: the manager did not stop within 30s")
		}
	}, nil
}
