//go:build !(linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le))

package uring

// Ring is io_uring's ring; on this system New always fails.
type Ring struct{}

// New returns ErrUnsupported: io_uring needs Linux on a 64-bit
// little-endian architecture.
func New(Config) (*Ring, error) { return nil, ErrUnsupported }

// Detect returns a *MissingError wrapping ErrUnsupported.
func Detect() (Feature, error) { return 0, &MissingError{Err: ErrUnsupported} }

// Close does nothing.
func (*Ring) Close() error { return nil }
