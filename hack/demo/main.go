// Command demo runs retry-operator end to end on one machine: a local control
// plane (etcd + kube-apiserver on loopback, data in a temp dir), the CRDs, and a
// kubeconfig to reach it. Ctrl-C shuts everything down.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/retry-operator/retry-operator/internal/testenv"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Println("starting etcd and kube-apiserver on loopback ...")
	env, err := testenv.Start()
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("stopping the control plane ...")
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "demo: stopping:", err)
		}
	}()

	dir, err := os.MkdirTemp("", "retry-operator-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		return err
	}
	kubectl := filepath.Join(env.BinaryAssetsDirectory, "kubectl")

	if err := runKubectl(ctx, kubectl, kubeconfig, "get", "namespaces"); err != nil {
		return err
	}
	fmt.Printf("\nThe control plane is up, with the CRDs installed. In another shell:\n\n")
	fmt.Printf("  export KUBECONFIG=%s PATH=%s:$PATH\n\n", kubeconfig, env.BinaryAssetsDirectory)
	fmt.Println("Press Ctrl-C to stop.")

	<-ctx.Done()
	return nil
}

func runKubectl(ctx context.Context, kubectl, kubeconfig string, args ...string) error {
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}
