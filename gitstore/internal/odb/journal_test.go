package odb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

func hashOf(c string) plumbing.Hash { return plumbing.NewHash(strings.Repeat(c, 40)) }

func reopenJournal(t *testing.T, j *journal, path string) []record {
	t.Helper()
	j.close()
	j2, recs, err := openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	*j = *j2
	return recs
}

// TestJournalChain: a reader gets the records written since the last reset, in order, and
// stops at a torn record and at the older records that a reset left behind it.
func TestJournalChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), JournalName)
	j, recs, err := openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { j.close() }()
	if len(recs) != 0 || j.size < journalChunk {
		t.Fatalf("new journal: %d records, %d bytes; want none, preallocated", len(recs), j.size)
	}
	for i, c := range []string{"a", "b", "c"} {
		if _, err := j.append(hashOf(c), hashOf(string(rune('b'+i))), []byte(strings.Repeat(c, 100*(i+1))), nil); err != nil {
			t.Fatal(err)
		}
	}
	recs = reopenJournal(t, j, path)
	if len(recs) != 3 || recs[2].new != hashOf("d") || string(recs[1].pack) != strings.Repeat("b", 200) || recs[0].seq+2 != recs[2].seq {
		t.Fatalf("after three appends: %+v", recs)
	}

	// A record torn in the middle (a crash during its write) ends the chain before it.
	torn := j.off
	if _, err := j.append(hashOf("d"), hashOf("e"), []byte("torn"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := j.f.WriteAt([]byte{0}, torn+recordHeader+30); err != nil {
		t.Fatal(err)
	}
	if recs = reopenJournal(t, j, path); len(recs) != 3 {
		t.Fatalf("with a torn fourth record: %d records; want 3", len(recs))
	}

	// After a reset, the records written next are the chain; the older ones behind them,
	// still on disk, are not.
	if err := j.reset(); err != nil {
		t.Fatal(err)
	}
	if recs = reopenJournal(t, j, path); len(recs) != 0 {
		t.Fatalf("after a reset: %d records; want none", len(recs))
	}
	if _, err := j.append(hashOf("e"), hashOf("f"), nil, nil); err != nil {
		t.Fatal(err)
	}
	if recs = reopenJournal(t, j, path); len(recs) != 1 || recs[0].new != hashOf("f") {
		t.Fatalf("after a reset and one append: %+v; want the one record", recs)
	}

	// A record larger than the file grows it.
	big := make([]byte, 3*journalChunk)
	if _, err := j.append(hashOf("f"), hashOf("0"), big, nil); err != nil {
		t.Fatal(err)
	}
	if recs = reopenJournal(t, j, path); len(recs) != 2 || len(recs[1].pack) != len(big) {
		t.Fatalf("after a record of %d bytes: %d records", len(big), len(recs))
	}

	// wipe leaves no byte of any record.
	if err := j.wipe(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range raw {
		if b != 0 {
			t.Fatalf("byte %d of the wiped journal is %#x", i, b)
		}
	}
}
