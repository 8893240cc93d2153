package bench

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// report holds the figures of one run.
type report struct {
	// operator run
	created, drain            time.Duration // from the first create
	lastFirst, lastSecond     time.Duration // last 1st / 2nd request seen by the server, from the first create
	attempts                  int           // requests the server saw
	statusWrites, conflicts   int64
	writesPerAttempt          float64
	tasksPerSec, attemptsRate float64
	late                      stats // server arrival of the 2nd request − announced readyAt
	lateQueue, lateSend       stats // the same split at the retry's claim: readyAt → claim, claim → arrival
	writeLatency              stats // of the manager's status writes
	events                    int   // Events the operator wrote
	load                      string
	serverGap                 stats // server arrival of the 2nd request − when the server sent the 429
	early, earlyServer        int
	multiReadyAt              int
	timeline                  []bucket
	bucketWidth               time.Duration
	errorLogs                 int
	firstErrors               []string
	anomalies                 []string
	workers, dispatchers      int
	peakHeap, baseHeap        uint64
	// raw ceiling
	rawWrites, rawConc int
	rawTook            time.Duration
	rawRate            float64
	ratio              float64
}

// bucket is a slice of the run (bucketWidth long), by instant relative to the
// first create.
type bucket struct {
	firsts, retriesDue, retriesSent int
	late                            []time.Duration // of the retries due in this step
}

type stats struct {
	n                  int
	min, p50, p99, max time.Duration
}

func statsOf(d []time.Duration) stats {
	if len(d) == 0 {
		return stats{}
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := func(q float64) time.Duration { return s[int(math.Ceil(q*float64(len(s))))-1] } // nearest rank
	return stats{n: len(s), min: s[0], p50: rank(0.50), p99: rank(0.99), max: s[len(s)-1]}
}

// analyse joins the server's log (what was sent, when) with the watch (what the
// operator announced) and the manager's counters.
func analyse(t0 time.Time, created time.Duration, log map[string]pathLog, w *watcher, m *runningManager) *report {
	seen := w.snapshot()
	readyAt, distinct, succeeded := seen.readyAt, seen.distinct, seen.succeeded
	r := &report{created: created}
	var lastDone time.Time
	for _, at := range succeeded {
		if at.After(lastDone) {
			lastDone = at
		}
	}
	r.drain = lastDone.Sub(t0)

	// Whole seconds, and at most about 25 rows.
	r.bucketWidth = time.Duration(math.Ceil(r.drain.Seconds()/25)) * time.Second
	second := func(d time.Duration) int { return max(0, int(d/r.bucketWidth)) }
	grow := func(i int) {
		for len(r.timeline) <= i {
			r.timeline = append(r.timeline, bucket{})
		}
	}
	var late, gap, queue, send []time.Duration
	for name := range succeeded {
		p, ok := log["/t/"+name]
		if !ok || len(p.arrivals) != attemptsPerTask {
			r.anomalies = append(r.anomalies, fmt.Sprintf("%s: the server saw %d requests, want %d", name, len(p.arrivals), attemptsPerTask))
			continue
		}
		first, retry := p.arrivals[0], p.arrivals[1]
		r.lastFirst = max(r.lastFirst, first.Sub(t0))
		r.lastSecond = max(r.lastSecond, retry.Sub(t0))
		g := retry.Sub(p.replied)
		gap = append(gap, g)
		if g < time.Second {
			r.earlyServer++
		}
		i := second(first.Sub(t0))
		grow(i)
		r.timeline[i].firsts++
		i = second(retry.Sub(t0))
		grow(i)
		r.timeline[i].retriesSent++

		ra, ok := readyAt[name]
		if !ok {
			r.anomalies = append(r.anomalies, name+": no readyAt seen while Waiting")
			continue
		}
		if distinct[name] > 1 {
			r.multiReadyAt++
		}
		l := retry.Sub(ra)
		late = append(late, l)
		if c, ok := seen.claimed[name]; ok {
			queue, send = append(queue, c.Sub(ra)), append(send, retry.Sub(c))
		}
		if l < 0 {
			r.early++
		}
		i = second(ra.Sub(t0))
		grow(i)
		r.timeline[i].retriesDue++
		r.timeline[i].late = append(r.timeline[i].late, l)
	}
	for _, p := range log {
		r.attempts += len(p.arrivals)
	}
	r.late, r.serverGap = statsOf(late), statsOf(gap)
	r.lateQueue, r.lateSend = statsOf(queue), statsOf(send)
	m.mu.Lock()
	r.writeLatency = statsOf(m.writeLatency)
	m.mu.Unlock()
	r.statusWrites, r.conflicts = m.statusWrites.Load(), m.conflicts.Load()
	r.writesPerAttempt = float64(r.statusWrites) / float64(r.attempts)
	r.tasksPerSec = numTasks / r.drain.Seconds()
	r.attemptsRate = float64(r.attempts) / r.drain.Seconds()
	if len(r.anomalies) > 5 {
		r.anomalies = append(r.anomalies[:5], fmt.Sprintf("... %d more", len(r.anomalies)-5))
	}
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fmtMS(d time.Duration) string { return fmt.Sprintf("%.1f ms", ms(d)) }

func goal(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// compare adds the raw ceiling and the ratios.
func (r *report) compare(writes int, took time.Duration, concurrency int) {
	r.rawWrites, r.rawTook, r.rawConc = writes, took, concurrency
	r.rawRate = float64(writes) / took.Seconds()
	// The operator's attempts per second against what the API server could
	// take if every attempt cost exactly its 2 status writes and nothing else.
	ceiling := r.rawRate / 2
	r.ratio = r.attemptsRate / ceiling
}

// print writes the table to stdout.
func (r *report) print() {
	ceiling := r.rawRate / 2

	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	row := func(k, v string, note ...string) {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", k, v, strings.Join(note, " "))
	}
	fmt.Fprintf(&b, "\nretry-operator benchmark: %d RetryTasks, each 429 `Retry-After: 1` then 200, loopback target, real kube-apiserver+etcd (%d CPUs shared by all, GOMAXPROCS %d, load average before %s)\n",
		numTasks, runtime.NumCPU(), runtime.GOMAXPROCS(0), r.load)
	fmt.Fprintf(&b, "manager: Workers %d, Dispatchers %d, client QPS %d / Burst %d, cache limited to the bench namespace, no metrics/probes, no leader election\n\n",
		r.workers, r.dispatchers, managerQPS, managerBurst)

	row("tasks created (pool of "+fmt.Sprint(createConcurrency)+")", fmt.Sprintf("%.2f s", r.created.Seconds()), "first create → last create returned")
	row("last 1st request at server", fmt.Sprintf("%.2f s", r.lastFirst.Seconds()), "from the first create")
	row("last 2nd request at server", fmt.Sprintf("%.2f s", r.lastSecond.Seconds()))
	row("drain", fmt.Sprintf("%.2f s", r.drain.Seconds()), "first create → last task seen Succeeded;",
		fmt.Sprintf("floor ≈ %.2f s (creation + the 1 s each task must wait)", (r.created+time.Second).Seconds()))
	row("tasks completed/s", fmt.Sprintf("%.0f", r.tasksPerSec), fmt.Sprintf("%d / drain", numTasks))
	row("attempts/s", fmt.Sprintf("%.0f", r.attemptsRate), fmt.Sprintf("%d requests at the server / drain", r.attempts))
	row("status writes/attempt", fmt.Sprintf("%.3f", r.writesPerAttempt), fmt.Sprintf("%d RetryTask status updates (%d conflicts) / %d attempts; target 2", r.statusWrites, r.conflicts, r.attempts))
	row("lateness p50", fmtMS(r.late.p50), fmt.Sprintf("server arrival of the 2nd request − readyAt announced while Waiting (n=%d)", r.late.n))
	row("lateness p99", fmtMS(r.late.p99), fmt.Sprintf("goal ≤ %s: %s", fmtMS(lateGoal), goal(r.late.p99 <= lateGoal)))
	row("lateness max", fmtMS(r.late.max), fmt.Sprintf("min %s", fmtMS(r.late.min)))
	row("  readyAt → claim started", fmt.Sprintf("p50 %s", fmtMS(r.lateQueue.p50)),
		fmt.Sprintf("p99 %s: waiting for a reconcile and a dispatch slot (claim = activeAttempt.startedAt, n=%d)", fmtMS(r.lateQueue.p99), r.lateQueue.n))
	row("  claim started → arrival", fmt.Sprintf("p50 %s", fmtMS(r.lateSend.p50)),
		fmt.Sprintf("p99 %s: the claim's status write, then connect and send", fmtMS(r.lateSend.p99)))
	row("early arrivals", fmt.Sprint(r.early), fmt.Sprintf("arrival < readyAt; must be 0: %s", goal(r.early == 0)))
	row("429 → 2nd request, server clock", fmt.Sprintf("min %s", fmtMS(r.serverGap.min)),
		fmt.Sprintf("p50 %s, p99 %s; under 1 s: %d (must be 0)", fmtMS(r.serverGap.p50), fmtMS(r.serverGap.p99), r.earlyServer))
	row("tasks with >1 readyAt seen", fmt.Sprint(r.multiReadyAt), "a readyAt is never replaced (I3)")
	row("manager status write latency", fmt.Sprintf("p50 %s", fmtMS(r.writeLatency.p50)),
		fmt.Sprintf("p99 %s, max %s (n=%d)", fmtMS(r.writeLatency.p99), fmtMS(r.writeLatency.max), r.writeLatency.n))
	row("Events written", fmt.Sprint(r.events), "events.k8s.io objects in the namespace, also API server writes")
	row("peak heap (HeapInuse)", fmt.Sprintf("%.1f MiB", float64(r.peakHeap)/(1<<20)),
		fmt.Sprintf("whole test process: manager + the bench's own watch of the tasks + clients + target; %.1f MiB before the tasks", float64(r.baseHeap)/(1<<20)))
	row("manager error log lines", fmt.Sprint(r.errorLogs), strings.Join(r.firstErrors, " | "))
	fmt.Fprintln(tw, "  \t\t")
	row("raw ceiling: status writes", fmt.Sprint(r.rawWrites), fmt.Sprintf("plain client loop, %d goroutines (= workers + dispatchers), no client-side limit, %d writes per task, no GET", r.rawConc, rawWritesPerTask))
	row("raw writes/s", fmt.Sprintf("%.0f", r.rawRate), fmt.Sprintf("in %.2f s", r.rawTook.Seconds()))
	row("ratio", fmt.Sprintf("%.2f", r.ratio), fmt.Sprintf("attempts/s ÷ (raw writes/s ÷ 2) = %.0f ÷ %.0f; goal ≥ %.1f: %s", r.attemptsRate, ceiling, ratioGoal, goal(r.ratio >= ratioGoal)))
	_ = tw.Flush()

	fmt.Fprintf(&b, "\ntimeline in %s steps from the first create: requests the server saw (firsts, retries), retries due (readyAt in the step) and their lateness:\n", r.bucketWidth)
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  from s\tfirsts sent\tretries due\tretries sent\tlate p50\tlate max\t\n")
	for i, k := range r.timeline {
		s := statsOf(k.late)
		p50, mx := "-", "-"
		if s.n > 0 {
			p50, mx = fmtMS(s.p50), fmtMS(s.max)
		}
		fmt.Fprintf(tw, "  %.0f\t%d\t%d\t%d\t%s\t%s\t\n", (time.Duration(i) * r.bucketWidth).Seconds(), k.firsts, k.retriesDue, k.retriesSent, p50, mx)
	}
	_ = tw.Flush()
	if len(r.anomalies) > 0 {
		fmt.Fprintf(&b, "\nanomalies: %s\n", strings.Join(r.anomalies, "; "))
	}
	fmt.Fprint(os.Stdout, b.String())
}
