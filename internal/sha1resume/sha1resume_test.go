package sha1resume

import (
	"bytes"
	"crypto/sha1"
	"math/rand/v2"
	"testing"
)

// TestSumResumed: a string's SHA-1 resumed from the states of one that began alike is its
// SHA-1, whether the two part at 0, at a state, just before or after one, or at the end,
// with a head or without, and with the result written over the states it resumed from; the
// states kept within keep bytes are the first of all, and serve to resume from as far as
// they go.
func TestSumResumed(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, Stride - 1, Stride, Stride + 1, 5*Stride + 17, 33000} {
		for _, head := range [][]byte{nil, []byte("tree 33000\x00")} {
			data := make([]byte, n)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			want := sha1.Sum(append(append([]byte(nil), head...), data...))
			all := len(head) + n
			got, states := Sum(nil, head, data, nil, 0, all)
			if got != want {
				t.Fatalf("%d bytes: %x, want %x", n, got, want)
			}
			if len(states) != (len(head)+n)/Stride*StateSize {
				t.Fatalf("%d bytes: %d bytes of states", n, len(states))
			}
			for _, at := range []int{0, 1, Stride - 1, Stride, Stride + 1, 3 * Stride, n - 1, n, rng.IntN(n + 1)} {
				if at < 0 || at > n {
					continue
				}
				changed := append([]byte(nil), data...)
				if at < n {
					changed[at]++
				}
				same := len(head) + at
				want := sha1.Sum(append(append([]byte(nil), head...), changed...))
				before := append([]byte(nil), states...)
				got, _ := Sum(nil, head, changed, before, same, all)
				if got != want {
					t.Fatalf("%d bytes, changed at %d: %x, want %x", n, at, got, want)
				}
				// States kept within keep bytes alone, resumed from, over those they read.
				keep := rng.IntN(all + 1)
				got, some := Sum(before, head, changed, before, same, keep)
				if got != want {
					t.Fatalf("%d bytes, changed at %d, states reused: %x, want %x", n, at, got, want)
				}
				if wantSome := keep / Stride * StateSize; !bytes.Equal(some, mustStates(t, head, changed)[:wantSome]) {
					t.Fatalf("%d bytes, changed at %d, kept within %d: %d bytes of states, want the first %d", n, at, keep, len(some), wantSome)
				}
				if got, _ := Sum(nil, head, data, some, same, all); got != sha1.Sum(append(append([]byte(nil), head...), data...)) {
					t.Fatalf("%d bytes, changed at %d, resumed from the states within %d: %x", n, at, keep, got)
				}
			}
		}
	}
}

// mustStates returns the states of head and data, all of them.
func mustStates(t *testing.T, head, data []byte) []byte {
	t.Helper()
	_, states := Sum(nil, head, data, nil, 0, len(head)+len(data))
	return states
}
