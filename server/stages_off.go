//go:build !sluice_stages || !linux

package server

// The hooks of the sluice_stages measurement build (stages_linux.go); in
// every other build they are empty and compile to nothing.

func stageSubmit(fd int32, enq, sub int64)  {}
func stageServe(fd int32, start, end int64) {}
func stageDone(fd int32, now int64)         {}
func stageAdmit(fd int32, since, at int64)  {}
func stageHandled(fd int32, end int64)      {}
func stageFlushed(l *loop, fd int32)        {}
