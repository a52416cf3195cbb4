package odb

import "testing"

func TestGeometricSplit(t *testing.T) {
	for _, tc := range []struct {
		counts []uint32
		want   int
	}{
		{[]uint32{5, 5, 5, 5, 100}, 4},
		{[]uint32{5, 20, 100}, 0},
		{[]uint32{5, 5}, 2},
		{[]uint32{1000}, 0},
	} {
		var packs []packFile
		for _, c := range tc.counts {
			packs = append(packs, packFile{count: c})
		}
		if got := geometricSplit(packs); got != tc.want {
			t.Errorf("geometricSplit(%v) = %d, want %d", tc.counts, got, tc.want)
		}
	}
}
