//go:build linux

package uring_test

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
)

func TestConsumeIovecs(t *testing.T) {
	data := []byte("abcdefghij")
	mk := func(lens ...int) []unix.Iovec {
		iovs := make([]unix.Iovec, len(lens))
		off := 0
		for i, l := range lens {
			if l > 0 {
				iovs[i].Base = &data[off]
			}
			iovs[i].SetLen(l)
			off += l
		}
		return iovs
	}
	flat := func(iovs []unix.Iovec) string {
		s := ""
		for _, v := range iovs {
			if v.Len > 0 {
				s += string(unsafe.Slice(v.Base, v.Len)) + "|"
			}
		}
		return s
	}
	for i, tc := range []struct {
		lens []int
		n    int
		want string
		left int
	}{
		{[]int{3, 3, 4}, 0, "abc|def|ghij|", 3},
		{[]int{3, 3, 4}, 2, "c|def|ghij|", 3},
		{[]int{3, 3, 4}, 3, "def|ghij|", 2},
		{[]int{3, 3, 4}, 7, "hij|", 1},
		{[]int{3, 3, 4}, 10, "", 0},
		{[]int{3, 0, 4}, 3, "defg|", 1}, // an empty iovec after a consumed one goes too
		{[]int{}, 5, "", 0},
	} {
		iovs := mk(tc.lens...)
		got := uring.ConsumeIovecs(iovs, tc.n)
		if flat(got) != tc.want || len(got) != tc.left {
			t.Errorf("%d: ConsumeIovecs(%v, %d) = %q (%d left), want %q (%d left)", i, tc.lens, tc.n, flat(got), len(got), tc.want, tc.left)
		}
		for j := range len(iovs) - len(got) {
			if iovs[j].Base != nil {
				t.Errorf("%d: consumed iovec %d still points at its bytes", i, j)
			}
		}
	}
}
