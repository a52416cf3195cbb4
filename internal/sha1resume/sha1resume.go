// Package sha1resume hashes a byte string with SHA-1 where a string hashed before was the
// same up to some point: it keeps the hash's state every Stride bytes, and resumes from the
// last state before the point instead of hashing the same bytes again. SHA-1 reads its input
// in order, so the state after n bytes depends on those bytes alone.
//
// The writer rebuilds a wide folder at every write (1,000 entries, 33 KB, at 100,000
// memories) that differs from its version before in one entry's hash; git names the folder
// by its SHA-1, and the group's pack, which holds it, ends with the SHA-1 of all its bytes.
package sha1resume

import (
	"crypto/sha1"
	"encoding"
)

// Stride is how many bytes of the hashed string lie between two states kept: a multiple of
// SHA-1's 64-byte block, where a state holds no pending input. A state takes StateSize bytes
// (96), so those of a 33 KB string take 1.5 KB.
const Stride = 2048

// StateSize is the length of one state in the states that Sum returns.
var StateSize = func() int {
	s, err := sha1.New().(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		panic(err)
	}
	return len(s)
}()

// Sum returns the SHA-1 of head followed by data, and the hash's states after each Stride
// bytes of its first keep bytes, appended to dst[:0]. If before holds the states of a string
// whose first same bytes were these, it resumes from the last of them within those bytes.
// dst may be before: its states up to that point stay, and later ones are written over.
func Sum(dst, head, data, before []byte, same, keep int) (sum [sha1.Size]byte, states []byte) {
	total := len(head) + len(data)
	kept := min(keep, total) / Stride // states returned
	d := sha1.New()
	at := 0 // bytes of head and data written to d
	states = dst[:0]
	if k := min(min(same, total)/Stride, len(before)/StateSize); k > 0 {
		if d.(encoding.BinaryUnmarshaler).UnmarshalBinary(before[(k-1)*StateSize:k*StateSize]) == nil {
			states = append(states, before[:min(k, kept)*StateSize]...)
			at = k * Stride
		} else {
			d.Reset()
		}
	}
	write := func(to int) { // head and data's bytes from at to to
		if at < len(head) {
			d.Write(head[at:min(to, len(head))])
			at = min(to, len(head))
		}
		if at < to {
			d.Write(data[at-len(head) : to-len(head)])
			at = to
		}
	}
	for next := at + Stride; next <= kept*Stride; next += Stride {
		write(next)
		states, _ = d.(encoding.BinaryAppender).AppendBinary(states)
	}
	write(total)
	d.Sum(sum[:0])
	return sum, states
}
