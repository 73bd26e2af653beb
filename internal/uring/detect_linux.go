//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring

import (
	"errors"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Detect finds what the running kernel offers, by setting up small rings
// with each optional flag, probing the opcodes (IORING_REGISTER_PROBE),
// submitting a multishot accept and a multishot recv on an invalid
// descriptor (an unknown flag fails with EINVAL before the descriptor is
// looked up, a known one with EBADF) and registering a one-entry buffer
// ring. It returns the features found and, when any of Required is missing
// or io_uring is refused outright, a *MissingError saying why (errors.Is(err,
// ErrUnsupported) holds). It takes a few hundred microseconds: call it once
// at start.
func Detect() (Feature, error) {
	// A ring with SINGLE_ISSUER belongs to the thread that created it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	r, err := New(Config{Entries: 8})
	if err != nil {
		var me *MissingError
		if errors.As(err, &me) {
			return 0, me
		}
		return 0, &MissingError{Err: err}
	}
	defer r.Close()
	have := r.kernelFeatures()
	have |= r.probeOps()
	if have.Has(FeatOpAccept) && r.tryEBADF(func() (*SQE, error) { return r.PrepAcceptMultishot(-1, 0, 0) }) {
		have |= FeatMultishotAccept
	}
	if have.Has(FeatOpRecv) && r.tryEBADF(func() (*SQE, error) { return r.PrepRecvMultishot(-1, 0, 0, 0) }) {
		have |= FeatMultishotRecv
	}
	if b, err := r.NewBufRing(0, 1, 64); err == nil {
		have |= FeatBufRing
		_ = b.Close()
	}
	for _, s := range []Feature{FeatCoopTaskrun, FeatSingleIssuer, FeatSingleIssuer | FeatDeferTaskrun} {
		if t, err := New(Config{Entries: 8, Setup: s}); err == nil {
			have |= s
			_ = t.Close()
		}
	}
	if missing := Required &^ have; missing != 0 {
		return have, &MissingError{Have: have, Missing: missing}
	}
	return have, nil
}

func (r *Ring) kernelFeatures() Feature {
	var f Feature
	if r.features&featSingleMmap != 0 {
		f |= FeatSingleMmap
	}
	if r.features&featNoDrop != 0 {
		f |= FeatNoDrop
	}
	if r.features&featExtArg != 0 {
		f |= FeatExtArg
	}
	return f
}

// probeOps asks the kernel which opcodes it supports.
func (r *Ring) probeOps() Feature {
	p := new(probe)
	if err := r.register(registerProbe, unsafe.Pointer(p), probeOps); err != nil {
		return 0
	}
	ops := []struct {
		op   uint8
		feat Feature
	}{
		{opAccept, FeatOpAccept}, {opRecv, FeatOpRecv}, {opSend, FeatOpSend},
		{opSendmsg, FeatOpSendmsg}, {opAsyncCancel, FeatOpAsyncCancel},
		{opTimeout, FeatOpTimeout}, {opRead, FeatOpRead}, {opClose, FeatOpClose},
		{opMsgRing, FeatOpMsgRing},
	}
	var f Feature
	for _, o := range ops {
		if int(o.op) < int(p.opsLen) && p.ops[o.op].flags&probeOpSupported != 0 {
			f |= o.feat
		}
	}
	return f
}

// tryEBADF submits the entry prep makes and reports whether it completed
// with EBADF (the flags were accepted, the descriptor was not).
func (r *Ring) tryEBADF(prep func() (*SQE, error)) bool {
	if _, err := prep(); err != nil {
		return false
	}
	if _, err := r.SubmitAndWait(1, -1); err != nil {
		return false
	}
	var c [1]CQE
	n := r.PeekBatch(c[:])
	r.Advance(n)
	return n == 1 && c[0].Res == -int32(unix.EBADF)
}
