package planner

import (
	"go/build"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestNoNetworkCode proves the planner and the parser are pure: no package they
// build on, directly or transitively, can open a connection, run a process or talk
// to Kubernetes. Only internal/dispatch may do that.
func TestNoNetworkCode(t *testing.T) {
	for _, dir := range []string{".", "../retryafter"} {
		deps := nonTestDeps(t, dir)
		if !slices.Contains(deps, "time") {
			t.Fatalf("%s: the walk missed the time package; it is broken", dir)
		}
		for _, p := range deps {
			if forbidden(p) {
				t.Errorf("%s depends on %s", dir, p)
			}
		}
	}
}

// TestNoNetworkCodeDetects shows the check can fail: net/http is caught, also
// through a transitive import.
func TestNoNetworkCodeDetects(t *testing.T) {
	ctx := buildContext()
	pkg, err := ctx.Import("net/http", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !forbidden(pkg.ImportPath) || !slices.ContainsFunc(pkg.Imports, forbidden) {
		t.Errorf("net/http and its imports %v are not all caught", pkg.Imports)
	}
	if forbidden("time") || forbidden("network") {
		t.Error("a false positive")
	}
}

// forbidden reports whether an import path is networking, process or Kubernetes code.
func forbidden(path string) bool {
	for _, root := range []string{"net", "crypto/tls", "os/exec", "syscall/js", "k8s.io", "sigs.k8s.io"} {
		if path == root || strings.HasPrefix(path, root+"/") {
			return true
		}
	}
	return false
}

func buildContext() build.Context {
	ctx := build.Default
	ctx.GOROOT = runtime.GOROOT()
	return ctx
}

// nonTestDeps lists every package the non-test files of dir depend on,
// transitively. This module's packages are read from the source tree and standard
// ones from GOROOT, so neither the network nor the go command is needed; any other
// module is listed and judged by its path alone.
func nonTestDeps(t *testing.T, dir string) []string {
	t.Helper()
	const module = "github.com/retry-operator/retry-operator/"
	root, err := filepath.Abs(filepath.Join(dir, "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ctx := buildContext()
	seen := map[string]bool{}
	var visit func(*build.Package)
	visit = func(pkg *build.Package) {
		for _, imp := range pkg.Imports {
			if seen[imp] || imp == "C" || imp == "unsafe" {
				continue
			}
			seen[imp] = true
			var dep *build.Package
			var err error
			if rel, ok := strings.CutPrefix(imp, module); ok {
				dep, err = ctx.ImportDir(filepath.Join(root, rel), 0)
			} else if !strings.Contains(strings.Split(imp, "/")[0], ".") {
				dep, err = ctx.Import(imp, "", 0)
			} else {
				continue
			}
			if err != nil {
				t.Fatalf("import %s: %v", imp, err)
			}
			visit(dep)
		}
	}
	self, err := ctx.ImportDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	visit(self)
	deps := make([]string, 0, len(seen))
	for p := range seen {
		deps = append(deps, p)
	}
	return deps
}
