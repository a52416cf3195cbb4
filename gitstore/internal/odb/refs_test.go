package odb

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// initTestRepo makes a bare repository and returns its path.
func initTestRepo(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "r.git")
	if err := Init(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func openTestRepo(t *testing.T) *Repo {
	t.Helper()
	r, err := Open(initTestRepo(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestCASRef moves main with compare-and-swap: from the value it has, and not from another.
func TestCASRef(t *testing.T) {
	r := openTestRepo(t)
	a := plumbing.NewHash(strings.Repeat("a", 40))
	b := plumbing.NewHash(strings.Repeat("b", 40))
	if h, err := r.ReadRef(); err != nil || !h.IsZero() {
		t.Fatalf("main of a new repository: %v, %v; want none", h, err)
	}
	if err := r.CASRef(plumbing.ZeroHash, a); err != nil {
		t.Fatal(err)
	}
	if err := r.CASRef(b, b); !errors.Is(err, ErrRefMoved) {
		t.Fatalf("CASRef from a value main does not have: %v; want ErrRefMoved", err)
	}
	if h, err := r.ReadRef(); err != nil || h != a {
		t.Fatalf("main: %v, %v; want %v", h, err, a)
	}
	if _, err := os.Stat(filepath.Join(r.Path(), MainRef+".lock")); !os.IsNotExist(err) {
		t.Fatalf("main.lock left behind: %v", err)
	}
}

// TestLockRefHeld: a main.lock that another git process holds stops CASRef with
// ErrRefLocked, saying which file, and leaves main and the lock alone.
func TestLockRefHeld(t *testing.T) {
	r := openTestRepo(t)
	a := plumbing.NewHash(strings.Repeat("a", 40))
	lock := filepath.Join(r.Path(), MainRef+".lock")
	if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := r.CASRef(plumbing.ZeroHash, a)
	if !errors.Is(err, ErrRefLocked) || !errors.Is(err, fs.ErrExist) {
		t.Fatalf("CASRef with main.lock held: %v; want ErrRefLocked from an existing file", err)
	}
	if want := MainRef + " is locked by another git process (" + lock + " exists)"; err.Error() != want {
		t.Errorf("error %q; want %q", err, want)
	}
	if h, _ := r.ReadRef(); !h.IsZero() {
		t.Errorf("main moved to %v", h)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("the other process's lock: %v", err)
	}
}
