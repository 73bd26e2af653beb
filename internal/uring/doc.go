// Package uring is the mechanics of one io_uring instance for an event loop:
// setting the ring up and tearing it down, finding out what the kernel
// offers, preparing submissions, submitting and waiting, reaping
// completions, lending and recycling provided buffers, and waking the loop
// from other goroutines. It uses raw system calls through
// golang.org/x/sys/unix and mmapped rings; no cgo.
//
// It owns the ring: the shared queues and their memory ordering (head and
// tail through sync/atomic), the per-entry scratch the kernel reads at
// submission (timespecs, message headers), the provided buffer ring and the
// rule that a buffer is either the kernel's or the application's, never
// both, and the user_data layout (kind, connection index, generation) that
// lets a loop drop completions for a connection that no longer exists.
//
// It refuses to own connections, budgets and policy. Which operations to
// keep armed, when to stop re-arming a recv (a read budget, an out-queue
// watermark), when to cancel the multishot accept (the listen gate), how to
// order sends on one connection, when to close: all of that is the engine's.
// The package reports what happened (a short send, a multishot that ended,
// -ENOBUFS, a stale generation); it never decides what to do about it.
//
// # Model
//
// A Ring belongs to one goroutine, the loop; with FeatSingleIssuer (and
// FeatDeferTaskrun, which needs it) that goroutine must be locked to the OS
// thread that called New. Only Waker.Wake may be called from elsewhere. The
// prep methods fill a submission entry and return it; when the submission
// queue is full they submit it first. Submit and SubmitAndWait hand the
// entries to the kernel with one io_uring_enter, which also runs the
// kernel's deferred completion work. PeekBatch copies completions out and
// Advance consumes them. None of these allocates.
//
// Memory a submission points at must outlive it: a send's bytes until its
// completion (the prep methods keep a reference until the entry's slot is
// reused, which is not enough on its own), a sendmsg's iovec array only
// until Submit returns. Provided buffers live outside the Go heap and are
// valid from BufRing.Take to BufRing.Recycle.
//
// # Sketch
//
//	runtime.LockOSThread()
//	feats, err := uring.Detect()
//	if err != nil { /* log err (it says what is missing); use epoll */ }
//	r, _ := uring.New(uring.Config{Entries: 256, CQEntries: 4096, Setup: feats.Setup()})
//	defer r.Close()
//	br, _ := r.NewBufRing(1, 4096, 4096)
//	r.PrepAcceptMultishot(lfd, unix.SOCK_CLOEXEC, uring.Pack(kindAccept, 0, 0))
//	var cqes [256]uring.CQE
//	for {
//		r.SubmitAndWait(1, nextTimer)
//		n := r.PeekBatch(cqes[:])
//		for _, c := range cqes[:n] {
//			// drop c when c.UserData.Gen() is not its connection's
//			// generation; accept: r.PrepRecvMultishot(fd, br.Group(), 0, …);
//			// recv: id, data, _ := br.Take(c); r.PrepSend(fd, data, …);
//			// send: resubmit the rest if short, else br.Recycle(id);
//			// any multishot without c.More(): re-arm it if still wanted.
//		}
//		r.Advance(n)
//	}
//
// On systems other than 64-bit little-endian Linux, New and Detect return
// errors matching ErrUnsupported.
package uring
