package fuzzseed

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// Dir is where go test reads a package's seed corpus from, relative to the
// package directory: testdata/fuzz/FuzzX/name.
const Dir = "testdata/fuzz"

// header is the first line of every corpus file.
const header = "go test fuzz v1\n"

// Seed is one named seed corpus entry: its file name under
// testdata/fuzz/FuzzX and the fuzz target's arguments, in order and of the
// target's parameter types.
//
// It is an alias of an unnamed struct so that tables can use short
// positional literals, {"name", []any{...}}, without vet's composites check
// (which flags unkeyed literals of named struct types from other packages).
type Seed = struct {
	Name string
	Args []any
}

// Corpus maps a fuzz target's name (FuzzX) to its seeds. Order within a
// target does not matter to the files.
type Corpus map[string][]Seed

// Encode renders args as a corpus file: the "go test fuzz v1" line, then one
// line per argument. It returns ErrNoArgs for no arguments and
// ErrUnsupportedType for a value that is not a []byte, string, bool, int,
// int8..int64, uint, uint8..uint64, float32 or float64 (named types
// included: convert them first).
func Encode(args ...any) ([]byte, error) {
	if len(args) == 0 {
		return nil, ErrNoArgs
	}
	b := []byte(header)
	for i, a := range args {
		var ok bool
		if b, ok = appendValue(b, a); !ok {
			return nil, fmt.Errorf("%w: argument %d is %T", ErrUnsupportedType, i, a)
		}
	}
	return b, nil
}

// appendValue appends a's corpus line, as Go's own encoder writes it but
// with uint8 and int32 as numbers, or reports that a has no encoding.
func appendValue(b []byte, a any) ([]byte, bool) {
	switch v := a.(type) {
	case []byte:
		return fmt.Appendf(b, "[]byte(%q)\n", v), true
	case string:
		return fmt.Appendf(b, "string(%q)\n", v), true
	case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Appendf(b, "%T(%v)\n", v, v), true
	case float32:
		// A NaN other than float32(math.NaN()) keeps its bits, as Go
		// writes it; every other value (NaN, ±Inf, -0 included) is %v.
		if math.IsNaN(float64(v)) && math.Float32bits(v) != math.Float32bits(float32(math.NaN())) {
			return fmt.Appendf(b, "math.Float32frombits(0x%x)\n", math.Float32bits(v)), true
		}
		return fmt.Appendf(b, "float32(%v)\n", v), true
	case float64:
		if math.IsNaN(v) && math.Float64bits(v) != math.Float64bits(math.NaN()) {
			return fmt.Appendf(b, "math.Float64frombits(0x%x)\n", math.Float64bits(v)), true
		}
		return fmt.Appendf(b, "float64(%v)\n", v), true
	}
	return b, false
}

// Write writes every seed of c to dir/target/name (directories 0755, files
// 0644), overwriting what is there. It writes nothing when the table has a
// bad name or an unencodable seed, and stops at the first I/O error. It
// never removes a file.
func Write(dir string, c Corpus) error {
	files, err := plan(dir, c)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f.path, f.want, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Check reports every seed of c whose file under dir is missing (ErrMissing)
// or differs from the table (ErrStale), each with a line diff, in one error
// that errors.Is matches against each of them. Files the table does not name
// are ignored; CheckStrict reports them too. A bad table gives ErrBadName,
// ErrNoArgs or ErrUnsupportedType.
func Check(dir string, c Corpus) error {
	return check(dir, c, false)
}

// CheckStrict is Check that also reports each file under dir, in a target's
// directory or not, that the table does not name (ErrUnexpected), such as a
// failing input the fuzzer wrote that was committed without a table entry.
func CheckStrict(dir string, c Corpus) error {
	return check(dir, c, true)
}

// Sync is the body of a TestSeedCorpus: with update (the test package's
// -update-corpus flag) it writes the files (Write), otherwise it checks them
// (Check).
func Sync(dir string, c Corpus, update bool) error {
	if update {
		return Write(dir, c)
	}
	return Check(dir, c)
}

// file is one seed file as the table wants it.
type file struct {
	path string
	want []byte
}

// plan validates c and encodes its files, sorted by target and in table
// order within a target.
func plan(dir string, c Corpus) ([]file, error) {
	var files []file
	var errs []error
	for _, target := range slices.Sorted(maps.Keys(c)) {
		if !validName(target) {
			errs = append(errs, fmt.Errorf("target %q: %w", target, ErrBadName))
			continue
		}
		seen := make(map[string]bool, len(c[target]))
		for _, s := range c[target] {
			if !validName(s.Name) || seen[s.Name] {
				errs = append(errs, fmt.Errorf("%s seed %q: %w", target, s.Name, ErrBadName))
				continue
			}
			seen[s.Name] = true
			want, err := Encode(s.Args...)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s/%s: %w", target, s.Name, err))
				continue
			}
			files = append(files, file{path: filepath.Join(dir, target, s.Name), want: want})
		}
	}
	if len(errs) > 0 {
		return nil, &listError{head: "sluice: fuzzseed: bad seed table", errs: errs}
	}
	return files, nil
}

// validName reports whether name can be one path element.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, `/\`)
}

func check(dir string, c Corpus, strict bool) error {
	files, err := plan(dir, c)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		got, err := os.ReadFile(f.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			errs = append(errs, &fileError{path: f.path, err: ErrMissing, detail: " (+table):\n" + diff(nil, f.want)})
		case err != nil:
			errs = append(errs, err)
		case !bytes.Equal(got, f.want):
			errs = append(errs, &fileError{path: f.path, err: ErrStale, detail: " (-file +table):\n" + diff(got, f.want)})
		}
	}
	if strict {
		errs = append(errs, unexpected(dir, files)...)
	}
	if len(errs) > 0 {
		return &listError{
			head: "sluice: fuzzseed: " + dir + " is out of step with the seed table (rewrite it with -update-corpus)",
			errs: errs,
		}
	}
	return nil
}

// unexpected lists the files under dir and its target directories that
// files does not name.
func unexpected(dir string, files []file) []error {
	named := make(map[string]bool, len(files))
	for _, f := range files {
		named[f.path] = true
	}
	targets, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, t := range targets {
		tpath := filepath.Join(dir, t.Name())
		if !t.IsDir() {
			errs = append(errs, &fileError{path: tpath, err: ErrUnexpected})
			continue
		}
		entries, err := os.ReadDir(tpath)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			if p := filepath.Join(tpath, e.Name()); !named[p] {
				errs = append(errs, &fileError{path: p, err: ErrUnexpected})
			}
		}
	}
	return errs
}

// diff renders got against want line by line: "  " for a line both have at
// that position, "- " for got's, "+ " for want's. Corpus files have one
// line per argument, so lines at the same position belong together.
func diff(got, want []byte) string {
	g, w := lines(got), lines(want)
	var b strings.Builder
	for i := range max(len(g), len(w)) {
		switch {
		case i < len(g) && i < len(w) && g[i] == w[i]:
			b.WriteString("\t  " + show(g[i]) + "\n")
		default:
			if i < len(g) {
				b.WriteString("\t- " + show(g[i]) + "\n")
			}
			if i < len(w) {
				b.WriteString("\t+ " + show(w[i]) + "\n")
			}
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// lines splits b at newlines; a final newline ends the last line rather
// than starting an empty one.
func lines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// show returns l as is when it is printable, else quoted, so that a stray
// carriage return or binary garbage is visible in the diff.
func show(l string) string {
	if !utf8.ValidString(l) || strings.ContainsFunc(l, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Sprintf("%q", l)
	}
	return l
}

// fileError is one file's problem: a sentinel and, for a missing or stale
// file, its diff.
type fileError struct {
	path   string
	err    error
	detail string
}

func (e *fileError) Error() string {
	return e.path + ": " + strings.TrimPrefix(e.err.Error(), "sluice: fuzzseed: ") + e.detail
}

func (e *fileError) Unwrap() error { return e.err }

// listError is a headline over one problem per line; errors.Is and
// errors.As see each problem.
type listError struct {
	head string
	errs []error
}

func (e *listError) Error() string {
	var b strings.Builder
	b.WriteString(e.head + ":")
	for _, err := range e.errs {
		b.WriteString("\n" + err.Error())
	}
	return b.String()
}

func (e *listError) Unwrap() []error { return e.errs }
