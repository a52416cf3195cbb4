package gitstore

import (
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestCatalogPagesFull: the buckets whose keys only grow are packed full as they grow, not
// half full as bbolt leaves pages split under random keys (catalog.go, appendFill).
func TestCatalogPagesFull(t *testing.T) {
	s := newTestStore(t)
	fill(t, s, 600, benchPath)
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bMem, bVer, bVerID} {
			st := tx.Bucket(b).Stats()
			if st.LeafPageN < 4 {
				t.Fatalf("%s: %d leaf pages, too few to tell", b, st.LeafPageN)
			}
			if used := float64(st.LeafInuse) / float64(st.LeafAlloc); used < 0.8 {
				t.Errorf("%s: leaves %.0f%% full (%d pages), want at least 80%%", b, 100*used, st.LeafPageN)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCatalogPagesFullAfterReset: a reset within a write transaction (catching up with a
// rewritten history) makes the buckets again, and they are packed full too.
func TestCatalogPagesFullAfterReset(t *testing.T) {
	s := newTestStore(t)
	err := s.updateCatalog(func(ct catTx) error {
		if err := ct.reset(); err != nil {
			return err
		}
		for _, b := range [][]byte{bMem, bVer, bVerID} {
			if got := ct.tx.Bucket(b).FillPercent; got != appendFill[string(b)] {
				t.Errorf("%s: fill %v after a reset, want %v", b, got, appendFill[string(b)])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
