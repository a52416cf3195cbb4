package gitstore

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkWritePolicy is the cost of the hygiene policy on writes: secrets off with no
// quota is the baseline; reject and redact scan every write (callers scan in parallel,
// before the writer); quotas read two counters in the writer. ns/op is per write.
//
//	go test ./gitstore -run '^$' -bench WritePolicy -benchtime 2000x
func BenchmarkWritePolicy(b *testing.B) {
	policies := []struct {
		name string
		p    PolicyPatch
	}{
		{"secrets=off", PolicyPatch{Secrets: ptr(SecretsOff)}},
		{"secrets=reject", PolicyPatch{Secrets: ptr(SecretsReject)}},
		{"secrets=redact", PolicyPatch{Secrets: ptr(SecretsRedact)}},
		{"secrets=off,quotas", PolicyPatch{Secrets: ptr(SecretsOff), MaxMemories: ptr(1 << 30), MaxBytes: ptr(int64(1 << 40))}},
	}
	for _, writers := range []int{1, 8} {
		for _, pol := range policies {
			b.Run(fmt.Sprintf("writers=%d/%s", writers, pol.name), func(b *testing.B) {
				s := benchStore(b)
				if _, err := s.UpdateInfo(context.Background(), StorePatch{Policy: &pol.p, Actor: apiActor}); err != nil {
					b.Fatal(err)
				}
				concurrentWrites(b, s, writers)
			})
		}
	}
}

// BenchmarkReadTracking is what a read pays to be tracked for expiry (touch: a map update,
// and a catalog write once per readFlushEvery memories), beside a whole Get of a 1 KB
// memory, which includes it.
func BenchmarkReadTracking(b *testing.B) {
	s := benchStore(b)
	fill(b, s, 1000, benchPath)
	page, err := s.List(context.Background(), ListOptions{Limit: 1000})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("touch", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			s.touch(page.Items[i%len(page.Items)].Memory.ID)
		}
	})
	b.Run("get", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := s.Get(context.Background(), page.Items[i%len(page.Items)].Memory.ID, true); err != nil {
				b.Fatal(err)
			}
		}
	})
}
