// Command manager runs retry-operator's controllers.
package main

import (
	"flag"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"
	"github.com/retry-operator/retry-operator/internal/controller"
)

func main() {
	var (
		metricsAddr, probeAddr string
		leaderElect            bool
		shutdownTimeout        time.Duration
		opts                   controller.Options
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "address the metrics endpoint binds to; 0 turns it off")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address the health probes bind to; 0 turns them off")
	flag.BoolVar(&leaderElect, "leader-elect", false, "elect a leader so that only one replica runs the controllers")
	flag.IntVar(&opts.Workers, "workers", 8, "concurrent reconciles")
	flag.IntVar(&opts.Dispatchers, "max-concurrent-dispatches", 64, "attempts in flight at once across all tasks")
	flag.BoolVar(&opts.AbortOnStop, "abort-on-stop", false, "abandon attempts in flight on shutdown (they become OutcomeUnknown) instead of letting them finish")
	flag.DurationVar(&opts.LeaseGrace, "lease-grace", 15*time.Second, "added to a request's timeout to form its lease; after it, an attempt with no result is OutcomeUnknown")
	flag.DurationVar(&shutdownTimeout, "graceful-shutdown-timeout", 45*time.Second, "how long a stopping manager waits for attempts in flight to finish and be recorded")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "no Kubernetes config: set KUBECONFIG or run in a cluster")
		os.Exit(1)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:        probeAddr,
		LeaderElection:                leaderElect,
		LeaderElectionID:              "retry-operator.retryoperator.dev",
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &shutdownTimeout,
	})
	if err != nil {
		log.Error(err, "creating the manager")
		os.Exit(1)
	}
	if _, err := controller.Setup(mgr, opts); err != nil {
		log.Error(err, "setting up the controllers")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "adding the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "adding the readiness check")
		os.Exit(1)
	}
	log.Info("starting the manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "running the manager")
		os.Exit(1)
	}
}
