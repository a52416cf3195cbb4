package gitstore

import (
	"context"
	"fmt"
)

// Usage is how much a store holds: its live memories and their content bytes.
type Usage struct {
	Memories int
	Bytes    int64
}

// Usage returns how many memories the store holds and their bytes, as of main.
func (s *Store) Usage(ctx context.Context) (Usage, error) {
	var u Usage
	err := s.view(ctx, func(ct catTx) error { u = ct.usage(); return nil })
	return u, err
}

// checkQuota refuses a write that would add memories memories and bytes bytes to
// the store, if that takes it past a quota of p. It runs in the writer, against the state
// the write builds on, so concurrent writes cannot overshoot. A write that adds nothing
// (or frees space) passes even when the store is over a quota that was lowered.
func (b *batch) checkQuota(p Policy, memories int, bytes int64) error {
	u := b.ct.usage()
	if p.MaxMemories > 0 && memories > 0 && u.Memories+memories > p.MaxMemories {
		return quotaError("max_memories", int64(p.MaxMemories), int64(u.Memories+memories), "memories")
	}
	if p.MaxBytes > 0 && bytes > 0 && u.Bytes+bytes > p.MaxBytes {
		return quotaError("max_bytes", p.MaxBytes, u.Bytes+bytes, "bytes")
	}
	return nil
}

func quotaError(quota string, limit, would int64, unit string) error {
	return &Error{Kind: KindInvalid, Rule: RuleQuota, Message: fmt.Sprintf("this write would make the store hold %d %s, past its quota %s of %d; "+
		"nothing was written: delete memories or raise the quota", would, unit, quota, limit)}
}

// liveDelta is how a version changes the usage: the change in live memories and in bytes.
func liveDelta(wasLive, isLive bool, oldSize, newSize int) (int, int64) {
	var m int
	var b int64
	if wasLive {
		m, b = m-1, b-int64(oldSize)
	}
	if isLive {
		m, b = m+1, b+int64(newSize)
	}
	return m, b
}
