package ioflush

// maxRWBytes caps the bytes gathered for one writev at 1 GiB. Linux writes at
// most MAX_RW_COUNT (just under 2 GiB) per call; staying below it means a
// short count can only mean that the send buffer filled up.
const maxRWBytes = 1 << 30

// Flusher owns the iovec scratch space for writev: one per event loop, not
// safe for concurrent use. The zero value is ready to use: the scratch
// (MaxIovecs entries, 16 KiB) is allocated by the first Flush that has bytes
// to write and reused after that,
// and every pointer in it is cleared after each syscall so the garbage
// collector can free buffers that were written.
type Flusher struct {
	scratch scratch
}
