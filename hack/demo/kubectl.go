package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// kubectl runs the kubectl built with the control plane against the demo's
// kubeconfig.
type kubectl struct {
	path, kubeconfig string
}

func (k kubectl) command(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, k.path, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
}

// run streams kubectl's output to the terminal, after echoing the command.
func (k kubectl) run(ctx context.Context, args ...string) error {
	fmt.Printf("$ kubectl %s\n", strings.Join(args, " "))
	cmd := k.command(ctx, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// output returns kubectl's standard output.
func (k kubectl) output(ctx context.Context, args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := k.command(ctx, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}
