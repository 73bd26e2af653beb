package uring

import "errors"

// DefaultEntries is the submission queue size a zero Config.Entries selects:
// enough for one turn of a loop with a few hundred connections, each turn
// submitting at most one send and one re-arm per connection (a full queue is
// submitted early, never dropped).
const DefaultEntries = 256

// MaxEntries is the largest submission queue the kernel accepts.
const MaxEntries = 32768

// SetupFeatures are the Feature bits Config.Setup may hold.
const SetupFeatures = FeatSingleIssuer | FeatDeferTaskrun | FeatCoopTaskrun

// Config sizes a Ring and chooses its setup flags. The zero value is a
// 256-entry ring with a kernel-sized completion queue and no setup flags.
type Config struct {
	// Entries is the submission queue size, a power of two up to
	// MaxEntries; zero means DefaultEntries.
	Entries uint32
	// CQEntries is the completion queue size, a power of two at least
	// Entries; zero lets the kernel choose (twice Entries). Multishot
	// operations post many completions per submission, so an engine sizes
	// this to its connection count; the kernel never drops completions
	// (FeatNoDrop) but an overflowed queue costs an extra system call.
	CQEntries uint32
	// Setup selects the optional setup flags, a subset of SetupFeatures;
	// Features.Setup() gives the ones Detect found. FeatDeferTaskrun needs
	// FeatSingleIssuer. With either, every method except Waker.Wake must be
	// called from the OS thread that called New (runtime.LockOSThread).
	Setup Feature
}

// Validate reports whether c can set up a ring.
func (c Config) Validate() error {
	pow2 := func(v uint32) bool { return v&(v-1) == 0 }
	switch {
	case c.Entries > MaxEntries || !pow2(c.Entries):
		return errors.Join(ErrBadConfig, errors.New("Entries must be a power of two up to MaxEntries"))
	case c.CQEntries != 0 && (!pow2(c.CQEntries) || c.CQEntries < c.entries()):
		return errors.Join(ErrBadConfig, errors.New("CQEntries must be zero or a power of two at least Entries"))
	case c.Setup&^SetupFeatures != 0:
		return errors.Join(ErrBadConfig, errors.New("Setup holds more than setup flags: "+(c.Setup&^SetupFeatures).String()))
	case c.Setup.Has(FeatDeferTaskrun) && !c.Setup.Has(FeatSingleIssuer):
		return errors.Join(ErrBadConfig, errors.New("FeatDeferTaskrun needs FeatSingleIssuer"))
	}
	return nil
}

func (c Config) entries() uint32 {
	if c.Entries == 0 {
		return DefaultEntries
	}
	return c.Entries
}

// Setup returns the setup flags in f, ready for Config.Setup. When the
// kernel offers DEFER_TASKRUN it is preferred to COOP_TASKRUN (the loop runs
// completion work when it asks for completions, never interrupted).
func (f Feature) Setup() Feature {
	s := f & SetupFeatures
	if !s.Has(FeatSingleIssuer) {
		s &^= FeatDeferTaskrun
	}
	if s.Has(FeatDeferTaskrun) {
		s &^= FeatCoopTaskrun
	}
	return s
}
