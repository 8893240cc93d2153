// Package metrics defines retry-operator's Prometheus metrics, registered on
// controller-runtime's registry so the manager's /metrics endpoint serves them.
// Labels are bounded: a target is named by its host, never its URL, and no
// header or body value is ever a label.
package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// Attempts counts attempts by target host, outcome and status code.
	Attempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "retryoperator_attempts_total",
		Help: "Attempts sent, by target host, outcome (Response, NotSent, Unknown) and HTTP status code (empty without a response).",
	}, []string{"host", "outcome", "code"})

	// Decisions counts the planner's decisions; Escalate and Reconcile page on-call.
	Decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "retryoperator_decisions_total",
		Help: "Decisions after an attempt, by phase reached and reason (e.g. Waiting/ServerRequested, Escalated/WaitBudgetExceeded, OutcomeUnknown/LeaseExpired).",
	}, []string{"phase", "reason"})

	// ServerWait observes the waits servers asked for with Retry-After.
	ServerWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "retryoperator_server_wait_seconds",
		Help:    "Waits requested by servers with Retry-After, honoured or not.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 14),
	})

	// Lateness observes how long after its readyAt a retry was claimed.
	Lateness = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "retryoperator_dispatch_lateness_seconds",
		Help:    "Time from a retry's readyAt to its claim; never negative, since nothing is sent early.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(Attempts, Decisions, ServerWait, Lateness)
}

// Code is a status code as a label; empty for no response.
func Code(status int) string {
	if status == 0 {
		return ""
	}
	return strconv.Itoa(status)
}
