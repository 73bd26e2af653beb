package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// SluiceModule is the product module whose commands (cmd/echo, cmd/kv) the
// lab builds and runs.
const SluiceModule = "github.com/sluicenet/sluice"

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
		return "", errors.New("sluice: bench: not inside a Go module (run from lab/ of the sluice repository)")
	}
	return filepath.Dir(mod), nil
}

// SluiceDir returns the directory of SluiceModule as the module containing
// dir resolves it: from the lab module, the checkout its replace directive
// names.
func SluiceDir(ctx context.Context, goCmd, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, goCmd, "list", "-m", "-f", "{{.Dir}}", SluiceModule)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("sluice: bench: go list -m %s: %w: %s (run from lab/ of the sluice repository)", SluiceModule, err, strings.TrimSpace(stderr.String()))
	}
	d := strings.TrimSpace(string(out))
	if d == "" {
		return "", fmt.Errorf("sluice: bench: go list -m %s: no directory (run from lab/ of the sluice repository)", SluiceModule)
	}
	return d, nil
}

// findDir sets *dir, when empty, to what find returns for the current
// directory.
func findDir(ctx context.Context, goCmd string, dir *string, find func(context.Context, string, string) (string, error)) error {
	if *dir != "" {
		return nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	*dir, err = find(ctx, goCmd, wd)
	return err
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
