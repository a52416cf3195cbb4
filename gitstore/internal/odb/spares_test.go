package odb

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

func spareNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), sparePrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestSpares: packs are written into files made ahead; Close removes the ones left, and
// Open removes what a crash left.
func TestSpares(t *testing.T) {
	r := openTestRepo(t)
	path := r.Path()
	dir := filepath.Join(path, "objects", "pack")
	for i := range 10 {
		o := &plumbing.MemoryObject{}
		o.SetType(plumbing.BlobObject)
		o.Write([]byte{byte(i)})
		if err := r.WritePack([]plumbing.EncodedObject{o}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Object(o.Hash()); err != nil {
			t.Fatal(err)
		}
	}
	// The goroutine fills up when half are gone: more than half wait.
	deadline := time.Now().Add(5 * time.Second)
	for len(spareNames(t, dir)) <= spareFiles/2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(spareNames(t, dir)); n <= spareFiles/2 || n > spareFiles {
		t.Fatalf("%d spares ready, want more than %d and at most %d", n, spareFiles/2, spareFiles)
	}
	// Spares are created in a subdirectory of SpareDir and wait in objects/pack: no file
	// stays in SpareDir (the goroutine may be making one as the test looks: CI once found
	// it so).
	makeDir := filepath.Join(path, SpareDir)
	deadline = time.Now().Add(5 * time.Second)
	for made := madeFiles(t, makeDir); len(made) != 0; made = madeFiles(t, makeDir) {
		if time.Now().After(deadline) {
			t.Fatalf("SpareDir holds %v, want no file", made)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The directory removed by hand while the repository is open: made again.
	// The goroutine may be making a file in it meanwhile: removed again until it is gone.
	var err error
	for range 100 {
		if err = os.RemoveAll(makeDir); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := range spareFiles {
		o := &plumbing.MemoryObject{}
		o.SetType(plumbing.BlobObject)
		o.Write([]byte("after " + strconv.Itoa(i)))
		if err := r.WritePack([]plumbing.EncodedObject{o}); err != nil {
			t.Fatal(err)
		}
	}
	deadline = time.Now().Add(5 * time.Second)
	for len(spareNames(t, dir)) <= spareFiles/2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(makeDir); err != nil {
		t.Fatalf("SpareDir not made again: %v", err)
	}
	r.Close()
	r.Close() // a store closed twice (deleted, then the data directory closed)
	if n := spareNames(t, dir); len(n) != 0 {
		t.Fatalf("spares left after Close: %v", n)
	}
	// A crash leaves some, also one created but not moved: the next Open removes them.
	os.WriteFile(filepath.Join(dir, sparePrefix+"123"), nil, 0o600)
	os.MkdirAll(filepath.Join(makeDir, "789"), 0o755)
	os.WriteFile(filepath.Join(makeDir, "789", sparePrefix+"456"), nil, 0o600)
	r, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Close() // never used: Close twice without a fill goroutine returns too
	if n := spareNames(t, dir); len(n) != 0 {
		t.Fatalf("spares left by a crash after Open: %v", n)
	}
	if made, _ := os.ReadDir(makeDir); len(made) != 0 {
		t.Fatalf("SpareDir holds %v after Open, want nothing", made)
	}
	if r.Packs() != 10+spareFiles {
		t.Fatalf("%d packs", r.Packs())
	}
}

// madeFiles returns the files in dir and its subdirectories.
func madeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSpareSubdirs: spares are created in a subdirectory of SpareDir that is replaced every
// spareDirFiles files, the old one removed, and the last one removed at close.
func TestSpareSubdirs(t *testing.T) {
	dir, makeDir := t.TempDir(), t.TempDir()
	s := newSpares(dir, makeDir, spareFiles)
	subs := map[string]bool{}
	for i := range 2*spareDirFiles + 1 {
		f, err := s.make()
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if filepath.Dir(s.sub) != makeDir {
			t.Fatalf("file %d made in %s, not a subdirectory of %s", i, s.sub, makeDir)
		}
		subs[s.sub] = true
		if made, _ := os.ReadDir(makeDir); len(made) != 1 {
			t.Fatalf("after file %d, SpareDir holds %v, want one subdirectory", i, made)
		}
	}
	if len(subs) != 3 {
		t.Fatalf("%d files made in %d subdirectories, want 3", 2*spareDirFiles+1, len(subs))
	}
	if n := len(spareNames(t, dir)); n != 2*spareDirFiles+1 {
		t.Fatalf("%d files moved, want %d", n, 2*spareDirFiles+1)
	}
	// The subdirectory removed by hand: a new one is made.
	os.Remove(s.sub)
	if f, err := s.make(); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	s.close()
	if made, _ := os.ReadDir(makeDir); len(made) != 0 {
		t.Fatalf("SpareDir holds %v after close, want nothing", made)
	}
}

// TestFewSpares: a repository opened with OpenFewSpares (a proposal's fork) writes its packs
// and moves main as any does, and keeps no file ready: none waits in objects/pack or is made
// in SpareDir, while writes go on or after.
func TestFewSpares(t *testing.T) {
	path := initTestRepo(t)
	r, err := OpenFewSpares(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dir, makeDir := filepath.Join(path, "objects", "pack"), filepath.Join(path, SpareDir)
	var last plumbing.Hash
	for i := range 10 {
		o := &plumbing.MemoryObject{}
		o.SetType(plumbing.BlobObject)
		o.Write([]byte("few " + strconv.Itoa(i)))
		if err := r.WritePack([]plumbing.EncodedObject{o}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Object(o.Hash()); err != nil {
			t.Fatal(err)
		}
		if err := r.CASRef(last, o.Hash()); err != nil {
			t.Fatal(err)
		}
		last = o.Hash()
		if n := spareNames(t, dir); len(n) != 0 {
			t.Fatalf("after write %d, %v wait in objects/pack; want none", i, n)
		}
	}
	// The goroutine that would make them has had its chance.
	for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if n, made := spareNames(t, dir), madeFiles(t, makeDir); len(n)+len(made) != 0 {
			t.Fatalf("%v wait in objects/pack and %v in SpareDir; want none", n, made)
		}
	}
	if h, err := r.ReadRef(); err != nil || h != last {
		t.Fatalf("main: %v, %v; want %v", h, err, last)
	}
}
