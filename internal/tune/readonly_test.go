package tune

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordFS passes Open through and records every name. The files it returns
// expose only fs.File (Stat, Read, Close): no Write, no Fd.
type recordFS struct {
	fsys   fs.FS
	mu     sync.Mutex
	opened []string
}

type readOnlyFile struct{ f fs.File }

func (r readOnlyFile) Stat() (fs.FileInfo, error) { return r.f.Stat() }
func (r readOnlyFile) Read(p []byte) (int, error) { return r.f.Read(p) }
func (r readOnlyFile) Close() error               { return r.f.Close() }

func (r *recordFS) Open(name string) (fs.File, error) {
	r.mu.Lock()
	r.opened = append(r.opened, name)
	r.mu.Unlock()
	f, err := r.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	return readOnlyFile{f}, nil
}

// TestReadsOnlyThroughFS: every host access is an fs.FS Open of a path under
// proc/ or sys/ (or the root itself), and reading works with files that
// cannot be written.
func TestReadsOnlyThroughFS(t *testing.T) {
	for _, name := range []string{"small", "large", "container", "broken"} {
		rec := &recordFS{fsys: DirFS(filepath.Join("testdata", name))}
		var out, errb bytes.Buffer
		if code := Main([]string{"-root", name}, &out, &errb, func(string) fs.FS { return rec }); code != 0 {
			t.Fatalf("%s: Main = %d: %s", name, code, errb.String())
		}
		if len(rec.opened) < len(SysctlNames) {
			t.Fatalf("%s: only %d opens recorded", name, len(rec.opened))
		}
		for _, p := range rec.opened {
			if p != "." && !strings.HasPrefix(p, "proc/") && !strings.HasPrefix(p, "sys/") {
				t.Errorf("%s: opened %q, outside proc/ and sys/", name, p)
			}
		}
	}
}

// TestLeavesTreeUnchanged runs tune on a copy of a fixture and compares every
// file's content, mode and modification time before and after.
func TestLeavesTreeUnchanged(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "small"))); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	var out, errb bytes.Buffer
	if code := Main([]string{"-root", dir, "-json"}, &out, &errb, DirFS); code != 0 {
		t.Fatalf("Main = %d: %s", code, errb.String())
	}
	if after := snapshot(t, dir); after != before {
		t.Fatalf("tree changed:\nbefore %s\nafter  %s", before, after)
	}
}

func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var sb strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		sb.WriteString(p + " " + info.Mode().String() + " " + info.ModTime().Format(time.RFC3339Nano))
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sb.WriteString(" " + strconv.Quote(string(data)))
		}
		sb.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// TestNoWritingAPIs inspects the source of internal/tune and cmd/tune: no
// import that could change the host (syscall, x/sys/unix, os/exec, net,
// unsafe), and from package os only the read-only os.DirFS and the process
// plumbing main needs.
func TestNoWritingAPIs(t *testing.T) {
	forbidden := map[string]bool{"syscall": true, "golang.org/x/sys/unix": true, "os/exec": true,
		"net": true, "net/http": true, "unsafe": true, "io/ioutil": true, "path/filepath": true}
	allowedOS := map[string]bool{"DirFS": true, "Stdout": true, "Stderr": true, "Args": true, "Exit": true}
	files := 0
	for _, dir := range []string{".", filepath.Join("..", "..", "cmd", "tune")} {
		matches, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range matches {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			files++
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			osName := ""
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if forbidden[path] {
					t.Errorf("%s imports %s", file, path)
				}
				if path == "os" {
					osName = "os"
					if imp.Name != nil {
						osName = imp.Name.Name
					}
				}
			}
			if osName == "" {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == osName && !allowedOS[sel.Sel.Name] {
					t.Errorf("%s uses os.%s; tune may only read through fs.FS", file, sel.Sel.Name)
				}
				return true
			})
		}
	}
	if files < 5 {
		t.Fatalf("inspected only %d files", files)
	}
}
