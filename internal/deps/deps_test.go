package deps

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// frameworkPackages are what an embedder imports to build a server.
var frameworkPackages = []string{"server", "protocol", "admission"}

// labModules are the comparison lab's own dependencies, which only the lab
// module (lab/go.mod) requires. (gonum.org/v1/gonum, which hdrhistogram-go's
// tests use, is in the product's go.sum on its own account.)
var labModules = []string{
	"github.com/panjf2000/gnet",
	"gonum.org/v1/plot",
	"github.com/sluicenet/sluice/lab",
}

// forbiddenModules are the comparison lab's and the examples' dependencies:
// none may reach a module that imports only frameworkPackages. The lab's
// go.mod adds the rest of its own (labOnlyModules).
var forbiddenModules = []string{
	"github.com/panjf2000/gnet",
	"gonum.org/v1/",
	"go.uber.org/zap",
	"github.com/redis/go-redis",
	"github.com/sluicenet/sluice/lab",
}

// requiredModules returns the module paths a go.mod requires.
func requiredModules(gomod []byte) []string {
	var mods []string
	block := false
	for _, line := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case block && f[0] == ")":
			block = false
		case block:
			mods = append(mods, f[0])
		case f[0] == "require" && len(f) == 2 && f[1] == "(":
			block = true
		case f[0] == "require" && len(f) >= 3:
			mods = append(mods, f[1])
		}
	}
	return mods
}

// labOnlyModules returns the modules lab/go.mod requires that the product's
// go.sum does not list at all: what only the lab brings in (gnet, gonum and
// their dependencies).
func labOnlyModules(t *testing.T, root string) []string {
	t.Helper()
	labMod, err := os.ReadFile(filepath.Join(root, "lab", "go.mod"))
	if err != nil {
		t.Fatalf("the lab module: %v", err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	inProduct := map[string]bool{}
	for _, m := range sumModules(sum) {
		path, _, _ := strings.Cut(m, " ")
		inProduct[path] = true
	}
	var only []string
	for _, m := range requiredModules(labMod) {
		if m != "github.com/sluicenet/sluice" && !inProduct[m] {
			only = append(only, m)
		}
	}
	for _, want := range labModules[:2] {
		found := false
		for _, m := range only {
			found = found || strings.HasPrefix(m, want)
		}
		if !found {
			t.Fatalf("lab/go.mod's own modules %v lack %s: is the lab still where this test looks?", only, want)
		}
	}
	return only
}

// TestProductRequiresNoLabModules: the product's go.mod and go.sum name none
// of the lab's own dependencies; they belong to lab/go.mod.
func TestProductRequiresNoLabModules(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range append(requiredModules(mod), sumModules(sum)...) {
		for _, bad := range labModules {
			if strings.HasPrefix(m, bad) {
				t.Errorf("the product's go.mod or go.sum lists %s (the lab's: %s)", m, bad)
			}
		}
	}
}

// TestEmbedderGoSum creates a module outside this one that imports only the
// framework packages (with a replace directive to this checkout), runs
// go mod tidy, and checks that no forbidden module is in its go.sum or
// go.mod. It tries the module cache alone first (GOPROXY=off, so it works
// offline once the modules are cached), then the configured proxy.
func TestEmbedderGoSum(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command on PATH to run go mod tidy")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var imports strings.Builder
	for _, p := range frameworkPackages {
		imports.WriteString("\t_ \"github.com/sluicenet/sluice/" + p + "\"\n")
	}
	files := map[string]string{
		"go.mod": "module example.com/embedder\n\ngo 1.26.0\n\nrequire github.com/sluicenet/sluice v0.0.0\n\nreplace github.com/sluicenet/sluice => " + root + "\n",
		"main.go": "// Command embedder imports only sluice's framework packages.\npackage main\n\nimport (\n" +
			imports.String() + ")\n\nfunc main() {}\n",
	}
	forbidden := append(append([]string(nil), forbiddenModules...), labOnlyModules(t, root)...)
	t.Logf("forbidden: %s", strings.Join(forbidden, ", "))
	// This module's go.sum holds the checksum of every module tidy may need,
	// so that tidy need not ask the checksum database; tidy prunes the rest.
	if sum, err := os.ReadFile(filepath.Join(root, "go.sum")); err == nil {
		files["go.sum"] = string(sum)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	tidy := func(proxy string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, goCmd, "mod", "tidy")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
		if proxy != "" {
			cmd.Env = append(cmd.Env, "GOPROXY="+proxy)
		}
		return cmd.CombinedOutput()
	}
	if out, err := tidy("off"); err != nil {
		t.Logf("go mod tidy from the module cache alone: %v\n%s", err, out)
		if out, err := tidy(""); err != nil {
			t.Fatalf("go mod tidy: %v\n%s", err, out)
		}
	}

	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	modules := sumModules(sum)
	t.Logf("an embedder's go.sum lists %d modules: %s", len(modules), strings.Join(modules, ", "))
	for i, m := range modules {
		for _, bad := range forbidden {
			if strings.HasPrefix(m, bad) {
				t.Errorf("%d: go.sum lists %s (forbidden: %s)", i, m, bad)
			}
		}
	}
	for _, bad := range forbidden {
		if bytes.Contains(mod, []byte(bad)) {
			t.Errorf("go.mod requires %s:\n%s", bad, mod)
		}
	}
}

// sumModules returns the distinct "path version" pairs of a go.sum, sorted.
func sumModules(sum []byte) []string {
	seen := map[string]bool{}
	for _, line := range strings.Split(string(sum), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		seen[f[0]+" "+strings.TrimSuffix(f[1], "/go.mod")] = true
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// TestServerImportsNoProtocolPackages: the engine finds a codec's refusals
// through protocol.Rejecter, so package server (its non-test files) imports
// none of the protocol packages beyond protocol itself.
func TestServerImportsNoProtocolPackages(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command on PATH to run go list")
	}
	out, err := exec.Command(goCmd, "list", "-deps", "github.com/sluicenet/sluice/server").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/sluicenet/sluice/protocol/") {
			t.Errorf("server depends on %s", pkg)
		}
	}
}
