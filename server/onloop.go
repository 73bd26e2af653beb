package server

import _ "unsafe" // for go:linkname

// getm returns the address of the runtime's M (OS thread) running the
// caller. A running loop goroutine is locked to its thread, and a locked
// thread runs no other goroutine; a loop that leaves its thread to sleep
// (loop.park) records no M until it locks again. So getm() equal to the
// loop's recorded M means
// "this call comes from the loop goroutine": Conn methods take the direct
// path then, and go through the inbox otherwise. The runtime keeps getm's
// signature for linkname users (see go.dev/issue/67401); it costs one call,
// about a nanosecond, against a syscall per alternative (gettid).
//
//go:linkname getm runtime.getm
func getm() uintptr
