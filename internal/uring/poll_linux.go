//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring

// The poll opcodes and their flags (IORING_OP_POLL_ADD, IORING_OP_POLL_REMOVE,
// IORING_POLL_*), from include/uapi/linux/io_uring.h.
const (
	opPollAdd    = 6
	opPollRemove = 7

	pollAddMulti     = 1 << 0
	pollUpdateEvents = 1 << 1
)

// PrepPollMultishot queues a multishot poll of fd for events (POLLIN,
// POLLOUT, POLLRDHUP, ... — the same bits as EPOLLIN, EPOLLOUT, EPOLLRDHUP;
// EPOLLEXCLUSIVE is passed through). It is edge-triggered: it posts one
// completion (Res is the ready mask) when armed on a ready descriptor and one
// per wake-up of the descriptor afterwards, with More set while it stays
// armed. A completion without More (cancellation, an error in Res, or the
// kernel giving up, for example on a completion queue overflow) means it has
// terminated and must be re-armed if it is still wanted. The multishot
// request holds a reference to the file until it terminates: closing fd
// alone does not end it (PrepPollRemove does).
func (r *Ring) PrepPollMultishot(fd int, events uint32, u UserData) (*SQE, error) {
	s, err := r.GetSQE()
	if err != nil {
		return nil, err
	}
	s.prep(opPollAdd, fd, 0, pollAddMulti, 0, u)
	s.opFlags = events // poll32_events, little-endian
	return s, nil
}

// PrepPollAdd queues a one-shot poll of fd for events: one completion (Res
// is the ready mask, More never set) as soon as fd is ready, at once if it
// is ready when armed. Re-arming it after each completion gives
// level-triggered readiness.
func (r *Ring) PrepPollAdd(fd int, events uint32, u UserData) (*SQE, error) {
	s, err := r.GetSQE()
	if err != nil {
		return nil, err
	}
	s.prep(opPollAdd, fd, 0, 0, 0, u)
	s.opFlags = events
	return s, nil
}

// PrepPollRemove queues the removal of the poll tagged target. Its own
// completion, tagged u, has Res 0 when it found the poll, -ENOENT when none
// was found and -EALREADY when the poll was being run (retry it); the removed
// poll completes with -ECANCELED and without More.
func (r *Ring) PrepPollRemove(target UserData, u UserData) (*SQE, error) {
	s, err := r.GetSQE()
	if err != nil {
		return nil, err
	}
	s.prep(opPollRemove, -1, uint64(target), 0, 0, u)
	return s, nil
}

// PrepPollUpdate queues a change of the events the multishot poll tagged
// target waits for, in place: the poll keeps its tag and stays armed, and the
// kernel checks the descriptor against the new events at once (a ready one
// posts a completion). Its own completion, tagged u, reports errors as
// PrepPollRemove's does; -EALREADY leaves the old events in force, so the
// caller retries.
func (r *Ring) PrepPollUpdate(target UserData, events uint32, u UserData) (*SQE, error) {
	s, err := r.GetSQE()
	if err != nil {
		return nil, err
	}
	s.prep(opPollRemove, -1, uint64(target), pollUpdateEvents|pollAddMulti, 0, u)
	s.opFlags = events
	return s, nil
}
