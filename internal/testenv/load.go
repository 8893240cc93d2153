package testenv

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Helpers for the benchmarks, which load the control plane hard.

// UnlimitedConfig is the admin config with no client-side rate limiter, so
// that a benchmark's own creates and reads measure the API server, not
// client-go.
func (e *Env) UnlimitedConfig() *rest.Config {
	cfg := rest.CopyConfig(e.Config)
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

// UnlimitedClient is a client on UnlimitedConfig.
func (e *Env) UnlimitedClient() (client.WithWatch, error) {
	return client.NewWithWatch(e.UnlimitedConfig(), client.Options{Scheme: e.Scheme})
}

// LoadAverage is the 1-minute load average: the machine may be shared, and
// the API server's ceiling with it.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}

// ErrorLog is a logr sink that drops info lines and counts error lines,
// keeping the first few to print: at load, info logging would measure the
// logger.
type ErrorLog struct {
	mu    sync.Mutex
	n     int
	first []string
}

func (l *ErrorLog) Init(logr.RuntimeInfo)          {}
func (l *ErrorLog) Enabled(int) bool               { return false }
func (l *ErrorLog) Info(int, string, ...any)       {}
func (l *ErrorLog) WithValues(...any) logr.LogSink { return l }
func (l *ErrorLog) WithName(string) logr.LogSink   { return l }
func (l *ErrorLog) Error(err error, msg string, _ ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if len(l.first) < 3 {
		l.first = append(l.first, fmt.Sprintf("%.200s", fmt.Sprintf("%s: %v", msg, err)))
	}
}

// Reset forgets what was counted.
func (l *ErrorLog) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n, l.first = 0, nil
}

// Count returns the errors counted and the first few of them.
func (l *ErrorLog) Count() (int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n, append([]string(nil), l.first...)
}
