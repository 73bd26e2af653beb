package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// ModuleDir returns the root of the Go module containing dir, from go env
// GOMOD.
func ModuleDir(ctx context.Context, goCmd, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, goCmd, "env", "GOMOD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("sluice: bench: go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == "/dev/null" {
		return "", errors.New("sluice: bench: not inside a Go module (run from the sluice repository)")
	}
	return filepath.Dir(mod), nil
}

// goBuild builds pkg (relative to moduleDir, e.g. "./cmd/echo") into out.
// The error carries the compiler's output.
func goBuild(ctx context.Context, goCmd, moduleDir, pkg, out string) error {
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", out, pkg)
	cmd.Dir = moduleDir
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msg, &msg
	if err := cmd.Run(); err != nil {
		text := strings.TrimSpace(msg.String())
		if lines := strings.Split(text, "\n"); len(lines) > 12 {
			text = strings.Join(lines[:12], "\n") + "\n..."
		}
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, text)
	}
	return nil
}
