//go:build linux

package odb

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestMoveRef: each write leaves main at its commit and no main.lock, and, once the
// repository is closed, no file of it open (main's old files are closed); a main that git
// packed into packed-refs is moved as well, also once refs/heads is gone.
func TestMoveRef(t *testing.T) {
	path := initTestRepo(t)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	publish := func(old plumbing.Hash, content string) plumbing.Hash {
		t.Helper()
		c := commitObjects(t, old, content)
		if _, err := r.Publish(c, old, head(c)); err != nil {
			t.Fatal(err)
		}
		if got, err := r.ReadRef(); err != nil || got != head(c) {
			t.Fatalf("main after a write: %v, %v; want %v", got, err, head(c))
		}
		if _, err := os.Lstat(filepath.Join(path, MainRef+".lock")); !os.IsNotExist(err) {
			t.Fatalf("main.lock after a write: %v", err)
		}
		return head(c)
	}
	h := publish(plumbing.ZeroHash, "first") // no main yet
	for _, s := range []string{"two", "three", "four"} {
		h = publish(h, s)
	}
	// As git pack-refs leaves it: main only in packed-refs.
	if err := os.WriteFile(filepath.Join(path, "packed-refs"), []byte(h.String()+" "+MainRef+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(path, MainRef)); err != nil {
		t.Fatal(err)
	}
	h = publish(h, "five")
	h = publish(h, "six")
	// And with refs/heads gone too (git pack-refs leaves the folder, a hand may not).
	if err := os.WriteFile(filepath.Join(path, "packed-refs"), []byte(h.String()+" "+MainRef+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Dir(filepath.Join(path, MainRef))); err != nil {
		t.Fatal(err)
	}
	publish(h, "seven")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// main's old files, held open until the spares goroutine closes them, are all closed.
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc here to list open files")
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, path) {
			t.Errorf("open after close: %s", target)
		}
	}
}

// TestCrashAfterExchange: a crash between making main.lock main and removing main.lock leaves
// main.lock holding main's old value; reopening removes it, so that main can be locked again.
func TestCrashAfterExchange(t *testing.T) {
	path := initTestRepo(t)
	crashed := false
	FaultHook = func(point, _ string) {
		if point == "ref-exchanged" && !crashed {
			crashed = true
			panic("crash")
		}
	}
	defer func() { FaultHook = nil }()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	c1 := commitObjects(t, plumbing.ZeroHash, "one")
	if _, err := r.Publish(c1, plumbing.ZeroHash, head(c1)); err != nil { // no main yet: renamed
		t.Fatal(err)
	}
	if err := r.Checkpoint(true); err != nil { // the journal then holds c2's record alone
		t.Fatal(err)
	}
	c2 := commitObjects(t, head(c1), "two")
	func() {
		defer func() { recover() }()
		r.Publish(c2, head(c1), head(c2))
	}()
	if !crashed {
		t.Skip("main is not moved by an exchange here")
	}
	lock := filepath.Join(path, MainRef+".lock")
	if b, err := os.ReadFile(lock); err != nil || string(b) != head(c1).String()+"\n" {
		t.Fatalf("main.lock after the crash: %q, %v; want main's old value", b, err)
	}
	abandon(r)
	r = reopenWithoutLock(t, path, head(c2))
	defer r.Close()
	c3 := commitObjects(t, head(c2), "three")
	if _, err := r.Publish(c3, head(c2), head(c3)); err != nil {
		t.Fatalf("a write after reopening: %v", err)
	}
}

// TestLockLeftBehind: when main.lock cannot be removed after the exchange that moved main,
// the write still succeeds; the lock is removed before main is next locked, unless it is no
// longer main's old file; while it stays, no checkpoint drops the record that lets the next
// Open remove it.
func TestLockLeftBehind(t *testing.T) {
	path := initTestRepo(t)
	lock := filepath.Join(path, MainRef+".lock")
	failing := false
	removeFile = func(name string) error {
		if failing && name == lock {
			return &os.PathError{Op: "remove", Path: name, Err: syscall.EIO}
		}
		return os.Remove(name)
	}
	defer func() { removeFile = os.Remove }()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	try := func(old plumbing.Hash, content string) (plumbing.Hash, error) {
		c := commitObjects(t, old, content)
		_, err := r.Publish(c, old, head(c))
		return head(c), err
	}
	publish := func(old plumbing.Hash, content string) plumbing.Hash {
		t.Helper()
		h, err := try(old, content)
		if err != nil {
			t.Fatalf("write %q: %v", content, err)
		}
		return h
	}
	// leave writes with main.lock's removal failing.
	leave := func(old plumbing.Hash, content string) plumbing.Hash {
		t.Helper()
		failing = true
		defer func() { failing = false }()
		return publish(old, content)
	}
	h := publish(plumbing.ZeroHash, "one") // no main yet: renamed
	h2 := leave(h, "two")
	if b, err := os.ReadFile(lock); err != nil || string(b) != h.String()+"\n" {
		t.Skipf("main is not moved by an exchange here (main.lock: %q, %v)", b, err)
	}
	failing = true
	if err := r.Checkpoint(true); err == nil {
		t.Fatal("a checkpoint with main.lock left behind succeeded")
	}
	// Once it can be removed, the next write removes it first.
	failing = false
	h3 := publish(h2, "three")
	if _, err := os.Lstat(lock); !os.IsNotExist(err) {
		t.Fatalf("main.lock after the next write: %v", err)
	}
	if err := r.Checkpoint(true); err != nil {
		t.Fatal(err)
	}

	// A main.lock that is no longer main's old file (another process's) is left alone.
	h4 := leave(h3, "four")
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := try(h4, "five"); !errors.Is(err, ErrRefLocked) {
		t.Fatalf("a write beside another process's main.lock: %v, want ErrRefLocked", err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("another process's main.lock was removed: %v", err)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}

	// One that stays until the repository closes is removed when it opens again.
	h6 := leave(h4, "six")
	failing = true
	if err := r.Close(); err == nil {
		t.Fatal("close with main.lock left behind reported no error")
	}
	failing = false
	r = reopenWithoutLock(t, path, h6)
	defer r.Close()
	publish(h6, "seven")
}

// reopenWithoutLock opens the repository at path and checks that the open removed main.lock
// and left main at want.
func reopenWithoutLock(t *testing.T, path string, want plumbing.Hash) *Repo {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(path, MainRef+".lock")); !os.IsNotExist(err) {
		t.Fatalf("main.lock after reopening: %v", err)
	}
	if got, err := r.ReadRef(); err != nil || got != want {
		t.Fatalf("main after reopening: %v, %v; want %v", got, err, want)
	}
	return r
}

// TestOldMainUnchanged: a file that was main is never written again. A git process (or
// Store.behind) that opened main just before a write may read it after: it must read a value
// main had, not a later write's lock before its journal record, nor a hash torn by a write
// over it. Reusing main's old file as the next lock was tried and broke exactly this.
func TestOldMainUnchanged(t *testing.T) {
	path := initTestRepo(t)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := plumbing.ZeroHash
	for _, s := range []string{"one", "two"} {
		c := commitObjects(t, h, s)
		if _, err := r.Publish(c, h, head(c)); err != nil {
			t.Fatal(err)
		}
		h = head(c)
	}
	opened := h
	f, err := os.Open(filepath.Join(path, MainRef))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, s := range []string{"three", "four", "five", "six"} {
		c := commitObjects(t, h, s)
		if _, err := r.Publish(c, h, head(c)); err != nil {
			t.Fatal(err)
		}
		h = head(c)
	}
	b := make([]byte, 64)
	n, _ := f.ReadAt(b, 0)
	if got := strings.TrimSpace(string(b[:n])); got != opened.String() {
		t.Fatalf("main's file as it was at %v reads %q four writes later", opened, got)
	}
}
