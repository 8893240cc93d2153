package dispatch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNothingIsLogged keeps this package silent: it handles Secret values, so it
// returns errors that name objects and keys and leaves logging to the caller (I7).
// It fails on a logging import, fmt.Print*, print/println or os.Stdout/Stderr in
// any non-test file.
func TestNothingIsLogged(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		checked++
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range logUses(f) {
			t.Errorf("%s: %s", name, p)
		}
	}
	if checked == 0 {
		t.Fatal("no source file checked")
	}
}

// TestNothingIsLoggedDetects shows the check can fail.
func TestNothingIsLoggedDetects(t *testing.T) {
	src := `package p
import ("fmt"; "os"; ctrl "sigs.k8s.io/controller-runtime")
func f() { fmt.Println("x"); fmt.Fprintf(os.Stderr, "y"); println(1); _ = ctrl.Log }`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := logUses(f); len(got) != 4 {
		t.Errorf("found %q, want 4 uses", got)
	}
}

func logUses(f *ast.File) []string {
	var found []string
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		switch {
		case path == "log", path == "log/slog", path == "github.com/go-logr/logr",
			strings.HasPrefix(path, "k8s.io/klog"), path == "sigs.k8s.io/controller-runtime",
			strings.HasPrefix(path, "sigs.k8s.io/controller-runtime/pkg/log"):
			found = append(found, "imports "+path)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok {
				if (x.Name == "fmt" && strings.HasPrefix(n.Sel.Name, "Print")) ||
					(x.Name == "os" && (n.Sel.Name == "Stdout" || n.Sel.Name == "Stderr")) {
					found = append(found, "uses "+x.Name+"."+n.Sel.Name)
				}
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "print" || id.Name == "println") {
				found = append(found, "calls "+id.Name)
			}
		}
		return true
	})
	return found
}
