package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sluicenet/sluice/lab/peers"
)

// cPeer is one C floor server: a single-threaded echo server that takes its
// port as its only argument and listens on 127.0.0.1. They do no framing, so
// they echo every codec's frames unchanged.
type cPeer struct {
	source string   // file in lab/peers/c (peers.CSource) or in PeersDir
	libs   []string // linker flags
	// header is the library header whose absence explains a failed build.
	header string
}

// cPeers are the C floor servers by server name.
var cPeers = map[string]cPeer{
	ServerCEpoll: {source: "epoll_echo.c"},
	ServerCUring: {source: "uring_echo.c", libs: []string{"-luring"}, header: "liburing.h"},
}

// BuildCPeer compiles the C floor server srv (ServerCEpoll or ServerCUring)
// into outDir with cc -O2 and returns the binary's path and the command line
// it used. The source is read from dir, or with dir empty from the lab's own
// (package peers, lab/peers/c), which it writes into outDir first. It
// returns ErrNoCompiler when cc is not found and ErrMissingLibrary when the
// build failed for want of the library's headers; other failures carry the
// compiler's output.
func BuildCPeer(ctx context.Context, cc, srv, dir, outDir string) (bin, cmdLine string, err error) {
	p, ok := cPeers[srv]
	if !ok {
		return "", "", fmt.Errorf("%w: %q is not a C peer", ErrServerUnavailable, srv)
	}
	if cc == "" {
		cc = "cc"
	}
	if dir == "" {
		text, err := peers.CSource(p.source)
		if err != nil {
			return "", "", err
		}
		if err := os.WriteFile(filepath.Join(outDir, p.source), text, 0o644); err != nil {
			return "", "", err
		}
		dir = outDir
	}
	src := filepath.Join(dir, p.source)
	bin = filepath.Join(outDir, strings.TrimSuffix(p.source, ".c"))
	args := append([]string{"-O2", "-o", bin, src}, p.libs...)
	cmdLine = cc + " " + strings.Join(args, " ")
	ccPath, err := exec.LookPath(cc)
	if err != nil {
		return "", cmdLine, fmt.Errorf("%w: %s not found on PATH (install gcc or clang)", ErrNoCompiler, cc)
	}
	if _, err := os.Stat(src); err != nil {
		return "", cmdLine, fmt.Errorf("%w: source %s: %v (set -peers-dir)", ErrServerUnavailable, src, err)
	}
	cmd := exec.CommandContext(ctx, ccPath, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		text := strings.TrimSpace(out.String())
		if p.header != "" && strings.Contains(text, p.header) {
			return "", cmdLine, fmt.Errorf("%w: %s needs %s (apt-get install liburing-dev): %s", ErrMissingLibrary, srv, p.header, firstLine(text))
		}
		return "", cmdLine, fmt.Errorf("%s: %v: %s", cmdLine, err, text)
	}
	return bin, cmdLine, nil
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
