// Command demo runs retry-operator end to end on one machine: a local control
// plane (etcd + kube-apiserver on loopback, data in a temp dir) with the CRDs,
// the manager in this process, a rate-limited demo API on loopback, and the
// sample tasks from config/samples pointed at it, shown with `kubectl get rt -w`
// until they finish. Ctrl-C shuts everything down and removes the temp dir.
//
//	go run ./hack/demo [-exit-when-done] [-timeout 3m]
//
// DEMO_EXIT=1 is the same as -exit-when-done: print the results and exit, with
// status 0 only if every sample task finished and no request came early.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/retry-operator/retry-operator/internal/testenv"
)

func main() {
	exitWhenDone := flag.Bool("exit-when-done", os.Getenv("DEMO_EXIT") == "1",
		"exit once the sample tasks finished instead of waiting for Ctrl-C (also DEMO_EXIT=1)")
	timeout := flag.Duration("timeout", 3*time.Minute, "how long to wait for the sample tasks to finish")
	apiAddr := flag.String("api-address", "127.0.0.1:8099", "address of the demo API; a free loopback port if it is taken")
	flag.Parse()

	if err := run(*exitWhenDone, *timeout, *apiAddr); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(exitWhenDone bool, timeout time.Duration, apiAddr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()

	dir, err := os.MkdirTemp("", "retry-operator-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	logPath := filepath.Join(dir, "manager.log")
	closeLog, err := logToFile(logPath)
	if err != nil {
		return err
	}
	defer closeLog()

	step("starting etcd and kube-apiserver on loopback, installing the CRDs")
	env, err := testenv.Start()
	if err != nil {
		return err
	}
	defer func() {
		step("stopping the control plane")
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "demo: stopping the control plane:", err)
		}
	}()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		return err
	}
	k := kubectl{path: filepath.Join(env.BinaryAssetsDirectory, "kubectl"), kubeconfig: kubeconfig}

	api, err := startAPI(apiAddr)
	if err != nil {
		return err
	}
	defer api.stop()
	step("demo API on %s%s: 429 with Retry-After once or twice per path, then 200", api.url, api.note)

	stopManager, err := startManager(env)
	if err != nil {
		return err
	}
	defer stopManager()
	step("manager running in this process; its log: %s", logPath)

	step("applying config/samples, pointed at %s", api.url)
	names, err := applySamples(ctx, k, dir, api.url)
	if err != nil {
		return err
	}

	step("kubectl get rt -w   (until every task is finished or needs a human)")
	finished, err := watchUntilDone(ctx, k, env, names, timeout)
	if ctx.Err() != nil {
		return nil // Ctrl-C
	}
	if err != nil {
		return err
	}
	report(ctx, k, env, names)
	requests, early := api.server.Stats()
	step("the demo API served %d requests; %d came before the Retry-After it had sent", requests, early)

	if exitWhenDone {
		switch {
		case !finished:
			return fmt.Errorf("not every sample task finished within %s", timeout)
		case early > 0:
			return errors.New("a request came before its Retry-After")
		}
		return nil
	}
	fmt.Printf("\nEverything keeps running. In another shell:\n\n")
	fmt.Printf("  export KUBECONFIG=%s PATH=%s:$PATH\n", kubeconfig, env.BinaryAssetsDirectory)
	fmt.Printf("  kubectl get rt\n\n")
	fmt.Println("Press Ctrl-C to stop.")
	<-ctx.Done()
	return nil
}

// step prints one line of the demo's narration.
func step(format string, args ...any) {
	fmt.Printf("\n==> "+format+"\n", args...)
}
