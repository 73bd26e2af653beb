package ringq_test

import (
	"testing"

	"github.com/sluicenet/sluice/ringq"
)

// FuzzRing drives a Ring and a slice model with the same operations, decoded
// from ops one byte at a time (low 3 bits: operation, high 5 bits: argument),
// and checks after every step that they agree and that no slot outside the
// live region still references a popped element.
func FuzzRing(f *testing.F) {
	f.Add(uint8(4), []byte{0, 0, 0, 0, 0, 2, 2, 0, 0, 3, 4, 12, 5, 2, 2, 2, 2, 2})
	f.Add(uint8(1), []byte{0, 0, 2, 2, 1, 3})
	f.Add(uint8(0), []byte{0, 7, 6, 0})
	f.Add(uint8(7), []byte{1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 6, 1, 2, 20, 29, 255})
	f.Fuzz(func(t *testing.T, capacity uint8, ops []byte) {
		r := ringq.New[*int](int(capacity % 65))
		capN := r.Cap()
		var model []*int
		for step, b := range ops {
			arg := int(b >> 3)
			switch b & 7 {
			case 0, 1: // push (weighted so rings fill)
				v := new(int)
				*v = step
				ok := r.Push(v)
				if ok != (len(model) < capN) {
					t.Fatalf("step %d: Push ok=%v with model len %d cap %d", step, ok, len(model), capN)
				}
				if ok {
					model = append(model, v)
				}
			case 2: // pop
				v, ok := r.Pop()
				if ok != (len(model) > 0) {
					t.Fatalf("step %d: Pop ok=%v with model len %d", step, ok, len(model))
				}
				if ok {
					if v != model[0] {
						t.Fatalf("step %d: Pop = %p, want %p", step, v, model[0])
					}
					model = model[1:]
				}
			case 3: // peek
				v, ok := r.Peek()
				if ok != (len(model) > 0) || ok && v != model[0] {
					t.Fatalf("step %d: Peek = (%p, %v), model len %d", step, v, ok, len(model))
				}
			case 4: // peekAt, including negative and out-of-range indexes
				i := arg - 2
				v, ok := r.PeekAt(i)
				inRange := i >= 0 && i < len(model)
				if ok != inRange || ok && v != model[i] {
					t.Fatalf("step %d: PeekAt(%d) = (%p, %v), model len %d", step, i, v, ok, len(model))
				}
			case 5: // At: replace the element in place
				i := arg - 2
				p := r.At(i)
				inRange := i >= 0 && i < len(model)
				if (p != nil) != inRange {
					t.Fatalf("step %d: At(%d) = %p, model len %d", step, i, p, len(model))
				}
				if p != nil {
					if *p != model[i] {
						t.Fatalf("step %d: *At(%d) = %p, want %p", step, i, *p, model[i])
					}
					v := new(int)
					*p = v
					model[i] = v
				}
			case 6: // reset, rarely
				if arg%4 == 0 {
					r.Reset()
					model = model[:0]
				}
			case 7: // nothing; invariants are checked below
			}
			check(t, step, r, model, capN)
		}
	})
}

func check(t *testing.T, step int, r *ringq.Ring[*int], model []*int, capN int) {
	t.Helper()
	n := len(model)
	if r.Len() != n || r.Cap() != capN || r.Empty() != (n == 0) || r.Full() != (n == capN) {
		t.Fatalf("step %d: Len=%d Cap=%d Empty=%v Full=%v, model len %d cap %d",
			step, r.Len(), r.Cap(), r.Empty(), r.Full(), n, capN)
	}
	for i, want := range model {
		if v, ok := r.PeekAt(i); !ok || v != want {
			t.Fatalf("step %d: PeekAt(%d) = (%p, %v), want %p", step, i, v, ok, want)
		}
	}
	slots := ringq.Slots(r)
	head := ringq.Head(r)
	for i := n; i < capN; i++ {
		if s := slots[(head+i)%capN]; s != nil {
			t.Fatalf("step %d: vacated slot %d still holds %p", step, (head+i)%capN, s)
		}
	}
}
