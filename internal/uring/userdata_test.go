package uring_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicenet/sluice/internal/uring"
)

func TestUserDataPack(t *testing.T) {
	for i, tc := range []struct {
		kind       uint8
		index, gen uint32
		wantGen    uint32
	}{
		{0, 0, 0, 0},
		{1, 2, 3, 3},
		{255, 1<<32 - 1, uring.GenMask, uring.GenMask},
		{7, 12345, uring.GenMask + 1, 0},     // generations wrap
		{7, 12345, 1<<32 - 1, uring.GenMask}, // high bits dropped
	} {
		u := uring.Pack(tc.kind, tc.index, tc.gen)
		if u.Kind() != tc.kind || u.Index() != tc.index || u.Gen() != tc.wantGen {
			t.Errorf("%d: Pack(%d, %d, %d) unpacks to (%d, %d, %d), want (%d, %d, %d)",
				i, tc.kind, tc.index, tc.gen, u.Kind(), u.Index(), u.Gen(), tc.kind, tc.index, tc.wantGen)
		}
	}
	// A reused slot with the next generation never matches the old tag.
	if uring.Pack(2, 9, 4) == uring.Pack(2, 9, 5) {
		t.Error("generations 4 and 5 of one slot pack alike")
	}
}

func TestCQEFlags(t *testing.T) {
	c := uring.CQE{Res: -105, Flags: 1 | 2 | 4 | 0xBEEF<<16}
	if !c.HasBuffer() || !c.More() || !c.SockNonEmpty() || c.BufferID() != 0xBEEF {
		t.Errorf("flags of %+v misread", c)
	}
	if c.Err() == nil || c.Err().Error() != "no buffer space available" {
		t.Errorf("Err() = %v, want ENOBUFS", c.Err())
	}
	if (uring.CQE{Res: 3}).Err() != nil {
		t.Error("a positive result reads as an error")
	}
}

func TestFeatureString(t *testing.T) {
	for i, tc := range []struct {
		f    uring.Feature
		want string
	}{
		{0, "none"},
		{uring.FeatSingleIssuer, "SETUP_SINGLE_ISSUER"},
		{uring.FeatMultishotRecv | uring.FeatBufRing, "RECV_MULTISHOT|REGISTER_PBUF_RING"},
		{1 << 40, "?"},
	} {
		if got := tc.f.String(); got != tc.want {
			t.Errorf("%d: %#x.String() = %q, want %q", i, uint64(tc.f), got, tc.want)
		}
	}
}

func TestFeatureSetup(t *testing.T) {
	all := uring.FeatSingleIssuer | uring.FeatDeferTaskrun | uring.FeatCoopTaskrun | uring.FeatOpSend
	for i, tc := range []struct{ have, want uring.Feature }{
		{0, 0},
		{all, uring.FeatSingleIssuer | uring.FeatDeferTaskrun},
		{uring.FeatCoopTaskrun | uring.FeatSingleIssuer, uring.FeatCoopTaskrun | uring.FeatSingleIssuer},
		{uring.FeatDeferTaskrun | uring.FeatCoopTaskrun, uring.FeatCoopTaskrun}, // DEFER needs SINGLE_ISSUER
	} {
		if got := tc.have.Setup(); got != tc.want {
			t.Errorf("%d: (%v).Setup() = %v, want %v", i, tc.have, got, tc.want)
		}
		if err := (uring.Config{Setup: tc.have.Setup()}).Validate(); err != nil {
			t.Errorf("%d: Setup() result fails Validate: %v", i, err)
		}
	}
}

func TestMissingError(t *testing.T) {
	err := error(&uring.MissingError{Have: uring.FeatOpSend, Missing: uring.FeatBufRing | uring.FeatMultishotRecv})
	if !errors.Is(err, uring.ErrUnsupported) || !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("%v does not match ErrUnsupported", err)
	}
	if s := err.Error(); !strings.Contains(s, "RECV_MULTISHOT|REGISTER_PBUF_RING") {
		t.Errorf("message %q does not name what is missing", s)
	}
	cause := errors.New("io_uring_setup: operation not permitted")
	err = &uring.MissingError{Err: cause}
	if !errors.Is(err, cause) || !strings.Contains(err.Error(), cause.Error()) {
		t.Errorf("%v does not carry its cause", err)
	}
	if !errors.Is(uring.ErrUnsupported, errors.ErrUnsupported) {
		t.Error("ErrUnsupported does not match errors.ErrUnsupported")
	}
}

func TestConfigValidate(t *testing.T) {
	for i, tc := range []struct {
		c  uring.Config
		ok bool
	}{
		{uring.Config{}, true},
		{uring.Config{Entries: 1, CQEntries: 2}, true},
		{uring.Config{Entries: uring.MaxEntries}, true},
		{uring.Config{Entries: uring.MaxEntries * 2}, false},
		{uring.Config{Entries: 100}, false},
		{uring.Config{Entries: 64, CQEntries: 96}, false},
		{uring.Config{CQEntries: 128}, false}, // below the default 256 entries
		{uring.Config{Setup: uring.FeatSingleIssuer | uring.FeatDeferTaskrun}, true},
		{uring.Config{Setup: uring.FeatDeferTaskrun}, false},
		{uring.Config{Setup: uring.FeatBufRing}, false},
	} {
		err := tc.c.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%d: Validate(%+v) = %v, want ok=%v", i, tc.c, err, tc.ok)
		}
		if err != nil && !errors.Is(err, uring.ErrBadConfig) {
			t.Errorf("%d: %v does not wrap ErrBadConfig", i, err)
		}
	}
}
