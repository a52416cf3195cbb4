package english

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "store", "0 stores"},
		{1, "store", "1 store"},
		{2, "open proposal", "2 open proposals"},
		{1, "memory", "1 memory"},
		{3, "memory", "3 memories"},
		{2, "key", "2 keys"},
		{2, "day", "2 days"},
		{-1, "hour", "-1 hours"},
	} {
		if got := Count(c.n, c.noun); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}
