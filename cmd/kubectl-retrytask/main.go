// Command kubectl-retrytask is a kubectl plugin (`kubectl retrytask ...`) for
// retry-operator. Its `plan` subcommand runs the operator's planner offline, so a
// user can ask "what would the operator do with this response?" without a cluster.
package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

const usage = `kubectl-retrytask: tools for retry-operator RetryTasks.

Usage:
  kubectl retrytask plan --status CODE --deadline RFC3339 [flags]

Commands:
  plan    dry-run the retry planner on one attempt's outcome; nothing is sent and
          no cluster is contacted

Run 'kubectl retrytask plan --help' for its flags.
`

// Exit codes: 0 a decision was printed, 1 it could not be written, 2 usage error.
const (
	exitOK    = 0
	exitIO    = 1
	exitUsage = 2
)

func main() {
	os.Exit(run(os.Args[1:], time.Now(), os.Stdout, os.Stderr))
}

// run is the whole program minus the process: args without the program name, and
// now, the default for --now.
func run(args []string, now time.Time, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "plan":
		return runPlan(args[1:], now, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "error: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}
