package controller

import (
	"time"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Options tune the controllers; zero values take the defaults.
type Options struct {
	// Clock is the only source of time; a fake one in tests.
	Clock clock.Clock
	// Workers is the number of concurrent reconciles.
	Workers int
	// Dispatchers bounds the attempts in flight across all tasks.
	Dispatchers int
	// LeaseGrace is added to a request's timeout to form its lease.
	LeaseGrace time.Duration
}

// Setup registers the RetryTask controller and its attempt runner with mgr.
func Setup(mgr ctrl.Manager, o Options) (*Runner, error) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.Dispatchers <= 0 {
		o.Dispatchers = 64
	}
	ev := &Events{Recorder: mgr.GetEventRecorder("retry-operator")}
	runner := NewRunner(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetScheme(), o.Clock, ev, o.Dispatchers)
	if o.LeaseGrace > 0 {
		runner.LeaseGrace = o.LeaseGrace
	}
	if err := mgr.Add(runner); err != nil {
		return nil, err
	}
	r := &RetryTaskReconciler{Client: mgr.GetClient(), Clock: o.Clock, Runner: runner, Events: ev}
	return runner, r.SetupWithManager(mgr, o.Workers)
}
