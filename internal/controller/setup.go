package controller

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/retry-operator/retry-operator/api/v1alpha1"

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
	// AbortOnStop abandons attempts in flight when the manager stops, as a
	// crash would; by default they finish and their results are recorded.
	AbortOnStop bool
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
	runner.AbortOnStop = o.AbortOnStop
	queues := &Queues{Reader: mgr.GetClient(), Clock: o.Clock, Runner: runner}
	runner.Queues = queues
	if err := mgr.Add(runner); err != nil {
		return nil, err
	}
	if err := mgr.Add(queues); err != nil {
		return nil, err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.RetryTask{}, queueIndex,
		func(o client.Object) []string {
			if q := o.(*v1alpha1.RetryTask).Spec.Queue; q != nil {
				return []string{*q}
			}
			return nil
		}); err != nil {
		return nil, err
	}
	r := &RetryTaskReconciler{Client: mgr.GetClient(), Clock: o.Clock, Runner: runner, Queues: queues, Events: ev}
	if err := r.SetupWithManager(mgr, o.Workers); err != nil {
		return nil, err
	}
	qr := &RetryQueueReconciler{Client: mgr.GetClient(), Clock: o.Clock, Queues: queues}
	return runner, qr.SetupWithManager(mgr)
}
