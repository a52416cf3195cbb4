package fsmount

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/secrets/secrettest"
)

// TestMountPrograms drives a mounted store with the programs that agents and people use on
// files, and checks the versions each makes: one per file written, none for what editors
// keep beside the files.
func TestMountPrograms(t *testing.T) {
	mt := mountNew(t, gitstore.Policy{}, Options{})
	step := func(script string, want map[string]string, versions ...string) {
		t.Helper()
		before := len(mt.versions(t))
		mt.sh(t, script)
		wantFiles(t, mt.files(t), want)
		got := mt.versions(t)
		if made := got[:len(got)-before]; !slices.Equal(made, versions) {
			t.Errorf("%s: made versions %q, want %q", script, made, versions)
		}
	}
	step(`printf 'hello\n' > a.md`, map[string]string{"/a.md": "hello\n"}, "created /a.md")
	id := mt.memory(t, "/a.md").ID
	step(`echo more >> a.md`, map[string]string{"/a.md": "hello\nmore\n"}, "modified /a.md")
	step(`mkdir -p notes/deep && cp a.md notes/deep/c.md`, map[string]string{"/a.md": "hello\nmore\n", "/notes/deep/c.md": "hello\nmore\n"}, "created /notes/deep/c.md")
	if out := mt.sh(t, `grep -rn more . | sort`); out != "./a.md:2:more\n./notes/deep/c.md:2:more\n" {
		t.Errorf("grep -r: %q", out)
	}
	// sed -i's temporary file stays in the mount, unless its six random letters are all
	// lower-case (one edit in about 180, docs/mount.md): then it is stored and deleted
	// around the write.
	before := len(mt.versions(t))
	mt.sh(t, `sed -i 's/hello/HELLO/' a.md`)
	wantFiles(t, mt.files(t), map[string]string{"/a.md": "HELLO\nmore\n", "/notes/deep/c.md": "hello\nmore\n"})
	if got := mt.versions(t); !slices.Equal(got[:len(got)-before], []string{"modified /a.md"}) && !sedWordTemp(got[:len(got)-before]) {
		t.Errorf("sed -i: made versions %q, want [modified /a.md]", got[:len(got)-before])
	}
	if got := mt.memory(t, "/a.md").ID; got != id {
		t.Errorf("sed -i made memory %s of /a.md, want it to stay %s", got, id)
	}
	cid := mt.memory(t, "/notes/deep/c.md").ID
	step(`mv notes team`, map[string]string{"/a.md": "HELLO\nmore\n", "/team/deep/c.md": "hello\nmore\n"}, "modified /team/deep/c.md")
	if got := mt.memory(t, "/team/deep/c.md").ID; got != cid {
		t.Errorf("mv of the folder made memory %s, want %s", got, cid)
	}
	step(`rm -r team && test ! -e team`, map[string]string{"/a.md": "HELLO\nmore\n"}, "deleted /team/deep/c.md")
	// A file created and closed without a write is written when its last descriptor is
	// released, just after close(2) returns.
	mt.sh(t, `touch empty.md`)
	eventually(t, func() error {
		if got := mt.versions(t)[0]; got != "created /empty.md" {
			return fmt.Errorf("after touch, the newest version is %q", got)
		}
		return nil
	})
	step(`rm empty.md`, map[string]string{"/a.md": "HELLO\nmore\n"}, "deleted /empty.md")

	// An editor's write: a swap file beside it, the new content to a temporary file renamed
	// over the memory. One version of the same memory; nothing of the rest in the store.
	step(`printf 'swap' > .a.md.swp
printf 'edited\n' > a.md.tmp.123.456
mv a.md.tmp.123.456 a.md
rm .a.md.swp`, map[string]string{"/a.md": "edited\n"}, "modified /a.md")
	if got := mt.memory(t, "/a.md").ID; got != id {
		t.Errorf("the editor's rename made memory %s of /a.md, want it to stay %s", got, id)
	}
	// vim's own sequence: a write test file (4913), the memory renamed to its backup
	// (a.md~), a new a.md written, the backup deleted.
	step(`touch 4913 && rm 4913
mv a.md a.md~
printf 'by vim\n' > a.md
rm a.md~`, map[string]string{"/a.md": "by vim\n"}, "modified /a.md")
	if got := mt.memory(t, "/a.md").ID; got != id {
		t.Errorf("vim's backup rename made memory %s of /a.md, want it to stay %s", got, id)
	}
	if vim := findVim(); vim != "" {
		step(vim+` -u NONE -i NONE -N -e -s -c '%s/by vim/by ex/' -c 'wq' a.md`, map[string]string{"/a.md": "by ex\n"}, "modified /a.md")
		if got := mt.memory(t, "/a.md").ID; got != id {
			t.Errorf("vim made memory %s of /a.md, want it to stay %s", got, id)
		}
	} else {
		t.Log("no vim here: its part is skipped (CI installs vim-tiny)")
	}
	if out := mt.sh(t, `ls -A`); out != "a.md\n" {
		t.Errorf("ls -A: %q, want only a.md", out)
	}
	// A memory moved to a scratch name and left there is gone from the mount; deleting the
	// scratch file deletes it.
	step(`cp a.md b.md && mv b.md b.md~ && test ! -e b.md && rm b.md~`, map[string]string{"/a.md": "by ex\n"}, "deleted /b.md", "created /b.md")

	// Every version is by the mount's actor.
	page, err := mt.store.Versions(context.Background(), gitstore.VersionFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range page.Versions {
		if v.CreatedBy.Type != testActor.Type || v.CreatedBy.ID != testActor.ID {
			t.Errorf("%s %s by %+v, want %s", v.Operation, v.Path, v.CreatedBy, testActor.ID)
		}
	}
}

// findVim is a vim that runs in ex mode, if one is installed.
func findVim() string {
	for _, name := range []string{"vim", "vim.tiny", "vim.basic"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestMountGoIO: Go's file I/O, fsync as the point of acknowledgement, reads of other
// writers' changes, and a rename over an existing memory.
func TestMountGoIO(t *testing.T) {
	mt := mountNew(t, gitstore.Policy{}, Options{CacheFor: 100 * time.Millisecond})
	ctx := context.Background()
	p := filepath.Join(mt.dir, "go.md")
	if err := os.WriteFile(p, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("two\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	// Acknowledged by fsync: in the store before the close.
	if got := *mt.memory(t, "/go.md").Content; got != "one\ntwo\n" {
		t.Errorf("after fsync the store holds %q", got)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(mt.versions(t)); n != 2 {
		t.Errorf("%d versions, want 2 (the close after fsync wrote nothing new)", n)
	}
	// Truncate, then write, on one open file: one version at its close.
	f, err = os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("three\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if v := mt.versions(t); len(v) != 3 || *mt.memory(t, "/go.md").Content != "three\n" {
		t.Errorf("after truncate and write: versions %v, content %q", v, *mt.memory(t, "/go.md").Content)
	}

	// Another writer's change shows within the cache's time.
	if _, err := mt.store.Write(ctx, gitstore.WriteInput{Path: "/go.md", Content: "from the API\n", Actor: gitstore.Actor{Type: gitstore.APIActor, ID: "apikey_x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := mt.store.Write(ctx, gitstore.WriteInput{Path: "/new/api.md", Content: "new\n", Actor: testActor}); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		b, err := os.ReadFile(p)
		if err != nil || string(b) != "from the API\n" {
			return fmt.Errorf("read %q, %v", b, err)
		}
		if b, err := os.ReadFile(filepath.Join(mt.dir, "new", "api.md")); err != nil || string(b) != "new\n" {
			return fmt.Errorf("new/api.md: %q, %v", b, err)
		}
		return nil
	})

	// A rename over an existing memory: its next version, and the moved one deleted.
	if err := os.Rename(filepath.Join(mt.dir, "new", "api.md"), p); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, mt.files(t), map[string]string{"/go.md": "new\n"})
	entries, err := os.ReadDir(mt.dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	// The folder that the rename emptied stays, as on any file system, until rmdir.
	if strings.Join(names, " ") != "go.md new" {
		t.Errorf("root holds %v", names)
	}
	if err := os.Remove(filepath.Join(mt.dir, "new")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(mt.dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("rm of a missing file: %v", err)
	}
	if err := os.Mkdir(filepath.Join(mt.dir, "go.md", "x"), 0o755); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("mkdir below a file: %v", err)
	}
}

// eventually retries check for up to 5 seconds.
func eventually(t *testing.T, check func() error) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRefusedWriteWhileOpen: a write refused at close(2) leaves the file as the store holds it
// at once, also while another descriptor keeps the file open (the kernel then sends no
// release, which is also what a read that comes before the release sees).
func TestRefusedWriteWhileOpen(t *testing.T) {
	mt := mountNew(t, gitstore.Policy{}, Options{})
	path := filepath.Join(mt.dir, "keep.md")
	if err := os.WriteFile(path, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	secret := secrettest.Samples()[0]
	err = os.WriteFile(path, []byte("key: "+secret.Content+"\n"), 0o644)
	if !errors.Is(err, syscall.EACCES) {
		t.Fatalf("write a secret: %v, want EACCES", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "keep\n" {
		t.Errorf("keep.md reads %q (%v) after the refused write", b, err)
	}
	b := make([]byte, 64)
	n, err := other.ReadAt(b, 0)
	if string(b[:n]) != "keep\n" {
		t.Errorf("the descriptor open before reads %q (%v) after the refused write", b[:n], err)
	}
	// Refused at fsync(2), with the descriptor still open: the same.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() // before the unmount: a descriptor left open at exit hangs the process
	if _, err := f.WriteString("key: " + secret.Content + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EACCES) {
		t.Errorf("fsync a secret: %v, want EACCES", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "keep\n" {
		t.Errorf("keep.md reads %q (%v) after the refused fsync", b, err)
	}
	if _, err := f.WriteString("more\n"); !errors.Is(err, syscall.EACCES) {
		t.Errorf("a write after the refused fsync: %v, want EACCES", err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EACCES) {
		t.Errorf("a second fsync after the refused one: %v, want EACCES", err)
	}
	if err := f.Truncate(0); !errors.Is(err, syscall.EACCES) {
		t.Errorf("ftruncate after the refused fsync: %v, want EACCES", err)
	}
	if err := f.Close(); !errors.Is(err, syscall.EACCES) {
		t.Errorf("close after the refused fsync: %v, want EACCES", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "keep\n" {
		t.Errorf("keep.md reads %q (%v) after the close of the refused open", b, err)
	}
	// Another open writes afresh, while those descriptors are still open.
	if err := os.WriteFile(path, []byte("kept again\n"), 0o644); err != nil {
		t.Errorf("write after the refusals: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "kept again\n" {
		t.Errorf("keep.md reads %q (%v), want the last write", b, err)
	}
	// A new file refused the same way is gone at once.
	keepNew, err := os.Create(filepath.Join(mt.dir, "new.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer keepNew.Close()
	if err := os.WriteFile(filepath.Join(mt.dir, "new.md"), []byte("key: "+secret.Content+"\n"), 0o644); !errors.Is(err, syscall.EACCES) {
		t.Fatalf("write a secret into a new file: %v, want EACCES", err)
	}
	if _, err := os.Stat(filepath.Join(mt.dir, "new.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a new file whose write was refused is still there: %v", err)
	}
}

// TestRefusalGoesToTheWriter: a refusal met at another open's close or fsync goes to the
// opens that changed the file too, whose later writes and close then fail: nothing they
// wrote is written in part, or silently dropped.
func TestRefusalGoesToTheWriter(t *testing.T) {
	mt := mountNew(t, gitstore.Policy{}, Options{})
	path := filepath.Join(mt.dir, "keep.md")
	secret := "key: " + secrettest.Samples()[0].Content + "\n"
	reset := func(t *testing.T) {
		t.Helper()
		if err := os.WriteFile(path, []byte("keep\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	open := func(t *testing.T, flag int) *os.File {
		t.Helper()
		f, err := os.OpenFile(path, flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() }) // before the unmount: an open descriptor hangs it
		return f
	}
	stored := func(t *testing.T, want string) {
		t.Helper()
		if got := mt.files(t)["/keep.md"]; got != want {
			t.Errorf("the store holds %q, want %q", got, want)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("keep.md reads %q (%v), want %q", b, err, want)
		}
	}

	t.Run("another open's close writes nothing of it", func(t *testing.T) {
		reset(t)
		a, b := open(t, os.O_RDWR), open(t, os.O_WRONLY)
		if _, err := a.WriteAt([]byte(secret), 0); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Errorf("close of an open that wrote nothing: %v, want none", err)
		}
		if _, err := a.WriteAt([]byte("more\n"), int64(len(secret))); err != nil {
			t.Errorf("the writer's next write: %v", err)
		}
		if err := a.Close(); !errors.Is(err, syscall.EACCES) {
			t.Errorf("the writer's close: %v, want EACCES", err)
		}
		stored(t, "keep\n")
	})

	t.Run("a read-only open's fsync", func(t *testing.T) {
		reset(t)
		a, r := open(t, os.O_RDWR), open(t, os.O_RDONLY)
		if _, err := a.WriteAt([]byte(secret), 0); err != nil {
			t.Fatal(err)
		}
		if err := r.Sync(); !errors.Is(err, syscall.EACCES) {
			t.Errorf("fsync of the read-only open: %v, want EACCES", err)
		}
		stored(t, "keep\n")
		if _, err := a.WriteAt([]byte("more\n"), 0); !errors.Is(err, syscall.EACCES) {
			t.Errorf("the writer's next write: %v, want EACCES", err)
		}
		if err := a.Close(); !errors.Is(err, syscall.EACCES) {
			t.Errorf("the writer's close: %v, want EACCES", err)
		}
		stored(t, "keep\n")
	})

	t.Run("two writers", func(t *testing.T) {
		reset(t)
		a, b := open(t, os.O_RDWR), open(t, os.O_RDWR)
		if _, err := a.WriteAt([]byte("kept by nobody\n"), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := b.WriteAt([]byte(secret), 0); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(); !errors.Is(err, syscall.EACCES) {
			t.Errorf("the close that met the refusal: %v, want EACCES", err)
		}
		if err := b.Close(); !errors.Is(err, syscall.EACCES) {
			t.Errorf("the other writer's close: %v, want EACCES", err)
		}
		stored(t, "keep\n")
	})

	t.Run("too large while open", func(t *testing.T) {
		reset(t)
		other := open(t, os.O_RDONLY) // so that no release comes
		a := open(t, os.O_RDWR|os.O_TRUNC)
		if _, err := a.Write(make([]byte, gitstore.MaxContentBytes+1)); !errors.Is(err, syscall.EFBIG) {
			t.Fatalf("a write past the limit: %v, want EFBIG", err)
		}
		readsSoon(t, other, "keep\n")
		if _, err := a.WriteAt([]byte("x"), 0); !errors.Is(err, syscall.EFBIG) {
			t.Errorf("the next write: %v, want EFBIG", err)
		}
		if err := a.Close(); !errors.Is(err, syscall.EFBIG) {
			t.Errorf("close: %v, want EFBIG", err)
		}
		stored(t, "keep\n")
	})

	t.Run("an O_TRUNC open is a change", func(t *testing.T) {
		if err := os.WriteFile(path, []byte("old line that is long\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		a := open(t, os.O_WRONLY|os.O_TRUNC) // as a shell's exec 3> f
		b := open(t, os.O_WRONLY)
		if _, err := b.WriteAt([]byte(secret), 0); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); !errors.Is(err, syscall.EACCES) {
			t.Errorf("the close that met the refusal: %v, want EACCES", err)
		}
		if _, err := a.Write([]byte("new\n")); !errors.Is(err, syscall.EACCES) {
			t.Errorf("a write of the truncating open: %v, want EACCES", err)
		}
		if err := a.Close(); !errors.Is(err, syscall.EACCES) {
			t.Errorf("the truncating open's close: %v, want EACCES", err)
		}
		stored(t, "old line that is long\n")
	})

	t.Run("a refused page is gone from open readers", func(t *testing.T) {
		reset(t)
		r := open(t, os.O_RDONLY)
		buf := make([]byte, 64)
		if _, err := r.ReadAt(buf, 0); err != nil && err != io.EOF {
			t.Fatal(err)
		}
		big := secret + strings.Repeat("x", 8192) // pages the kernel may keep, filled whole
		a := open(t, os.O_RDWR)
		if _, err := a.WriteAt([]byte(big), 0); err != nil {
			t.Fatal(err)
		}
		if n, _ := r.ReadAt(buf, 0); string(buf[:n]) != big[:n] {
			t.Errorf("before its close, the write reads %q through another descriptor", buf[:n])
		}
		if err := a.Close(); !errors.Is(err, syscall.EACCES) {
			t.Errorf("close: %v, want EACCES", err)
		}
		readsSoon(t, r, "keep\n")
	})

	t.Run("an append after a refusal", func(t *testing.T) {
		reset(t)
		before := open(t, os.O_WRONLY|os.O_APPEND)
		a := open(t, os.O_RDWR)
		if _, err := a.WriteAt([]byte(secret), 0); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(); !errors.Is(err, syscall.EACCES) {
			t.Errorf("close: %v, want EACCES", err)
		}
		if _, err := before.Write([]byte("log\n")); err != nil {
			t.Fatal(err)
		}
		if err := before.Close(); err != nil {
			t.Fatal(err)
		}
		stored(t, "keep\nlog\n")
		if err := os.WriteFile(path, []byte(secret), 0o644); !errors.Is(err, syscall.EACCES) {
			t.Errorf("write a secret: %v, want EACCES", err)
		}
		mt.sh(t, "echo more >> keep.md")
		stored(t, "keep\nlog\nmore\n")
	})

	t.Run("ftruncate is written at close", func(t *testing.T) {
		reset(t)
		open(t, os.O_RDONLY) // so that no release comes, which would write it too
		a := open(t, os.O_RDWR)
		if err := a.Truncate(2); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		stored(t, "ke")
	})

	t.Run("ftruncate of a refused open", func(t *testing.T) {
		reset(t)
		a := open(t, os.O_RDWR)
		if _, err := a.WriteAt([]byte(secret), 0); err != nil {
			t.Fatal(err)
		}
		if err := a.Sync(); !errors.Is(err, syscall.EACCES) {
			t.Errorf("fsync: %v, want EACCES", err)
		}
		if err := a.Truncate(gitstore.MaxContentBytes + 1); !errors.Is(err, syscall.EACCES) {
			t.Errorf("ftruncate past the limit after the refusal: %v, want EACCES", err)
		}
	})

	t.Run("truncate of a closed file past the limit", func(t *testing.T) {
		reset(t)
		if err := os.Truncate(path, gitstore.MaxContentBytes+1); !errors.Is(err, syscall.EFBIG) {
			t.Errorf("truncate past the limit: %v, want EFBIG", err)
		}
		stored(t, "keep\n")
		if err := os.WriteFile(path, []byte("after\n"), 0o644); err != nil {
			t.Errorf("a write after the refused truncate: %v", err)
		}
		stored(t, "after\n")
	})
}

// readsSoon checks that f, a descriptor open before a refusal, reads want within a moment:
// the kernel learns asynchronously that its pages and size went, well before the mount's
// CacheFor (half a second) would let them go anyway.
func readsSoon(t *testing.T, f *os.File, want string) {
	t.Helper()
	buf := make([]byte, 64)
	for deadline := time.Now().Add(200 * time.Millisecond); ; time.Sleep(10 * time.Millisecond) {
		n, _ := f.ReadAt(buf, 0)
		if string(buf[:n]) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a descriptor open before the refusal reads %q, want %q", buf[:n], want)
		}
	}
}

// TestMountShellChildren: a shell's child that exits closes a copy of the descriptor that it
// inherited, and each such close writes what was written so far; a character cut in two
// there is not refused (children that check their close, as sleep and cat do, succeed), but
// written whole at the next close. A scratch file keeps what it is given.
func TestMountShellChildren(t *testing.T) {
	mt := mountNew(t, gitstore.Policy{}, Options{})
	mt.sh(t, `set -e; { printf 'caf\303'; /bin/true; sleep 0; cat /dev/null; printf '\251\n'; } > utf.md`)
	mt.sh(t, `{ echo one; /bin/true; echo two; } > two.md`)
	wantFiles(t, mt.files(t), map[string]string{"/utf.md": "café\n", "/two.md": "one\ntwo\n"})
	if strings.Contains(mt.log.String(), "refused, not UTF-8") {
		t.Errorf("a character cut in two at a close was refused:\n%s", mt.log.String())
	}
	// A program whose last close finds the character cut in two is told, and nothing
	// is written.
	before := mt.versions(t)
	f, err := os.Create(filepath.Join(mt.dir, "cut.md"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("caf\303")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); !errors.Is(err, syscall.EILSEQ) {
		t.Errorf("the last close of a character cut in two: %v, want EILSEQ", err)
	}
	eventually(t, func() error { // the release comes after the close returns
		if !strings.Contains(mt.log.String(), "not written at the file's last close") {
			return fmt.Errorf("the release's refusal is not in the log:\n%s", mt.log.String())
		}
		return nil
	})
	if got := mt.versions(t); len(got) != len(before) {
		t.Errorf("a character cut in two made versions %v", got[:len(got)-len(before)])
	}
	scratch := filepath.Join(mt.dir, "cut.md.tmp")
	if err := os.WriteFile(scratch, []byte("caf\303"), 0o644); err != nil {
		t.Errorf("a scratch file that ends in a character cut in two: %v", err)
	}
	if got, err := os.ReadFile(scratch); err != nil || string(got) != "caf\303" {
		t.Errorf("the scratch file reads %q, %v", got, err)
	}
}

// TestUnmountWithOpenFile: an unmount while a program has written to a file that it still
// has open names that file in the log.
func TestUnmountWithOpenFile(t *testing.T) {
	mt := mountNew(t, gitstore.Policy{}, Options{})
	f, err := os.Create(filepath.Join(mt.dir, "partway.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("first half\n"); err != nil {
		t.Fatal(err)
	}
	// The unmount is lazy while the file is open, and this process serves on until it
	// is closed (the deferred close).
	if err := mt.m.Unmount(context.Background()); err != nil {
		t.Fatal(err)
	}
	if log := mt.log.String(); !strings.Contains(log, "unmounted while a program has the file open") || !strings.Contains(log, "path=/partway.md") {
		t.Errorf("the log does not name the open file:\n%s", log)
	}
	f.Close()
	served := make(chan struct{})
	go func() { mt.m.Wait(); close(served) }()
	select {
	case <-served: // the detached mount ends with its last open file
	case <-time.After(10 * time.Second):
		t.Fatal("the detached mount still serves after its last file was closed")
	}
}

// TestMountRefusals: what the store refuses is refused with its errno, logged, and nothing
// is written.
func TestMountRefusals(t *testing.T) {
	max := 3
	mt := mountNew(t, gitstore.Policy{MaxMemories: max}, Options{})
	if err := os.WriteFile(filepath.Join(mt.dir, "keep.md"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(name string, content []byte) error {
		f, err := os.Create(filepath.Join(mt.dir, name))
		if err != nil {
			return err
		}
		_, werr := f.Write(content)
		cerr := f.Close()
		return errors.Join(werr, cerr)
	}
	secret := secrettest.Samples()[0]
	for _, tc := range []struct {
		name, file string
		content    []byte
		want       syscall.Errno
		log        string
	}{
		{"too large", "big.md", make([]byte, gitstore.MaxContentBytes+1), syscall.EFBIG, "errno=EFBIG"},
		{"a secret", "secret.md", []byte("key: " + secret.Content + "\n"), syscall.EACCES, "errno=EACCES"},
		{"a secret over a memory", "keep.md", []byte("key: " + secret.Content + "\n"), syscall.EACCES, "errno=EACCES"},
		{"not UTF-8", "latin1.md", []byte("caf\xe9\n"), syscall.EILSEQ, "errno=EILSEQ"},
		{"a name git keeps", ".git", []byte("x"), syscall.EPERM, "errno=EPERM"},
		{"a Windows device name", "aux.md", []byte("x"), syscall.EPERM, "errno=EPERM"},
		{"a case twin", "KEEP.md", []byte("x"), syscall.EPERM, "errno=EPERM"},
		{"a control character", "bad\x01.md", []byte("x"), syscall.EPERM, "errno=EPERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := mt.versions(t)
			err := write(tc.file, tc.content)
			if !errors.Is(err, tc.want) {
				t.Errorf("write %s: %v, want %v", tc.file, err, tc.want)
			}
			if !strings.Contains(mt.log.String(), tc.log) {
				t.Errorf("the log lacks %q:\n%s", tc.log, mt.log.String())
			}
			if got := mt.versions(t); len(got) != len(before) {
				t.Errorf("a refused write made versions %v", got[:len(got)-len(before)])
			}
			if strings.Contains(mt.log.String(), secret.Secret) {
				t.Errorf("the log shows the secret")
			}
		})
	}
	wantFiles(t, mt.files(t), map[string]string{"/keep.md": "keep\n"})
	if b, _ := os.ReadFile(filepath.Join(mt.dir, "keep.md")); string(b) != "keep\n" {
		t.Errorf("keep.md reads %q after the refused write", b)
	}
	if _, err := os.Stat(filepath.Join(mt.dir, "secret.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a new file whose write was refused is still there: %v", err)
	}
	// The quota: the store may hold 3 memories.
	for i := 1; i < max; i++ {
		if err := write(fmt.Sprintf("m%d.md", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := write("over.md", []byte("x")); !errors.Is(err, syscall.EDQUOT) {
		t.Errorf("past the quota: %v, want EDQUOT", err)
	}
	if err := os.Mkdir(filepath.Join(mt.dir, ".git"), 0o755); !errors.Is(err, syscall.EPERM) {
		t.Errorf("mkdir .git: %v, want EPERM", err)
	}
	if err := os.Rename(filepath.Join(mt.dir, "keep.md"), filepath.Join(mt.dir, ".gitmodules")); !errors.Is(err, syscall.EPERM) {
		t.Errorf("mv to .gitmodules: %v, want EPERM", err)
	}
	// A rename that changes only the case of a name leaves no twin.
	if err := os.Rename(filepath.Join(mt.dir, "keep.md"), filepath.Join(mt.dir, "Keep.md")); err != nil {
		t.Errorf("mv keep.md Keep.md: %v", err)
	}
	// A new file not written yet has no twin either.
	open, err := os.Create(filepath.Join(mt.dir, "Fresh.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if err := write("fresh.md", []byte("x")); !errors.Is(err, syscall.EPERM) {
		t.Errorf("a twin of a new file still open: %v, want EPERM", err)
	}
	// A memory moved to a scratch name (vim's backup) stays in the store until a new file
	// takes its name: its twin is refused at the create, and its own name is not new.
	if err := os.Rename(filepath.Join(mt.dir, "Keep.md"), filepath.Join(mt.dir, "Keep.md~")); err != nil {
		t.Fatal(err)
	}
	if err := write("keep.md", []byte("x")); !errors.Is(err, syscall.EPERM) {
		t.Errorf("a twin of a memory moved to a scratch name: %v, want EPERM", err)
	}
	if err := write("Keep.md", []byte("saved again\n")); err != nil {
		t.Errorf("a new file in the place of a memory moved to a scratch name: %v", err)
	}
}

// TestMountReadOnly: a read-only mount, and a mount of the past, read what they show and
// refuse every change with EROFS.
func TestMountReadOnly(t *testing.T) {
	mt := mountNew(t, gitstore.Policy{}, Options{})
	ctx := context.Background()
	res, err := mt.store.Write(ctx, gitstore.WriteInput{Path: "/a.md", Content: "then\n", Actor: testActor})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mt.store.Write(ctx, gitstore.WriteInput{Path: "/a.md", Content: "now\n", Actor: testActor}); err != nil {
		t.Fatal(err)
	}
	past, err := mt.store.ReaderAt(ctx, res.Version.Commit)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		opts Options
		want string
	}{"read-only": {Options{ReadOnly: true}, "now\n"}, "in the past": {Options{Reader: past}, "then\n"}} {
		t.Run(name, func(t *testing.T) {
			ro := mt.another(t, tc.opts)
			p := filepath.Join(ro.dir, "a.md")
			if b, err := os.ReadFile(p); err != nil || string(b) != tc.want {
				t.Errorf("read %q, %v; want %q", b, err, tc.want)
			}
			for what, err := range map[string]error{
				"write":    os.WriteFile(p, []byte("x"), 0o644),
				"create":   os.WriteFile(filepath.Join(ro.dir, "b.md"), []byte("x"), 0o644),
				"mkdir":    os.Mkdir(filepath.Join(ro.dir, "d"), 0o755),
				"rm":       os.Remove(p),
				"mv":       os.Rename(p, filepath.Join(ro.dir, "c.md")),
				"truncate": os.Truncate(p, 0),
			} {
				if !errors.Is(err, syscall.EROFS) {
					t.Errorf("%s: %v, want EROFS", what, err)
				}
			}
			if !strings.Contains(ro.log.String(), "read-only") {
				t.Errorf("the log does not say why:\n%s", ro.log.String())
			}
		})
	}
	if n := len(mt.versions(t)); n != 2 {
		t.Errorf("%d versions, want the 2 written before", n)
	}
}

// TestMountConcurrentWriters: the API and the mount write one file at once. Every write
// that was acknowledged is a version, and the file ends as the last version has it.
func TestMountConcurrentWriters(t *testing.T) {
	mt := mountNew(t, gitstore.Policy{}, Options{CacheFor: 50 * time.Millisecond})
	ctx := context.Background()
	p := filepath.Join(mt.dir, "shared.md")
	const each = 25
	var wg sync.WaitGroup
	errs := make(chan error, 2*each)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				content := fmt.Sprintf("writer %d write %d\n", w, i)
				var err error
				if w == 0 {
					err = os.WriteFile(p, []byte(content), 0o644)
				} else {
					_, err = mt.store.Write(ctx, gitstore.WriteInput{Path: "/shared.md", Content: content, Actor: gitstore.Actor{Type: gitstore.APIActor, ID: "apikey_other"}})
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	page, err := mt.store.Versions(ctx, gitstore.VersionFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, v := range page.Versions {
		full, err := mt.store.Version(ctx, v.ID, true)
		if err != nil {
			t.Fatal(err)
		}
		seen[*full.Content] = true
	}
	if len(seen) != 2*each || len(page.Versions) != 2*each {
		t.Errorf("%d versions with %d contents, want %d: one per write", len(page.Versions), len(seen), 2*each)
	}
	last := *mt.memory(t, "/shared.md").Content
	if last != *mustVersion(t, mt.store, page.Versions[0].ID).Content {
		t.Errorf("the memory holds %q, not its newest version", last)
	}
	eventually(t, func() error {
		if b, err := os.ReadFile(p); err != nil || string(b) != last {
			return fmt.Errorf("the mount reads %q, %v; the store holds %q", b, err, last)
		}
		return nil
	})
}

func mustVersion(t *testing.T, st *gitstore.Store, id string) gitstore.Version {
	t.Helper()
	v, err := st.Version(context.Background(), id, true)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMountHoldsBounded: files that only the mount holds (scratch files) are bounded in
// number, as each is in size: a program cannot make the mount grow without end.
func TestMountHoldsBounded(t *testing.T) {
	mt := mountNew(t, gitstore.Policy{}, Options{})
	made := 0
	for ; made <= maxHeld; made++ {
		err := os.WriteFile(filepath.Join(mt.dir, fmt.Sprintf("f%d.tmp", made)), []byte("x"), 0o644)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if made != maxHeld {
		t.Errorf("held %d scratch files, want the limit %d", made, maxHeld)
	}
	if err := os.WriteFile(filepath.Join(mt.dir, "big.tmp.1"), make([]byte, gitstore.MaxContentBytes+1), 0o644); !errors.Is(err, syscall.EFBIG) && !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("a scratch file past the size limit: %v", err)
	}
	if err := os.Remove(filepath.Join(mt.dir, "f0.tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mt.dir, "again.tmp"), make([]byte, gitstore.MaxContentBytes+1), 0o644); !errors.Is(err, syscall.EFBIG) {
		t.Errorf("a scratch file past the size limit: %v, want EFBIG", err)
	}
	if n := len(mt.versions(t)); n != 0 {
		t.Errorf("scratch files made %d versions", n)
	}
}

// TestMountCreateOverAnotherWriter: a file that another writer made after the mount last
// looked is opened, not replaced, by an open with O_CREAT (and without O_TRUNC).
func TestMountCreateOverAnotherWriter(t *testing.T) {
	mt := mountNew(t, gitstore.Policy{}, Options{CacheFor: time.Minute})
	p := filepath.Join(mt.dir, "late.md")
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stat: %v", err) // the kernel and the mount now remember that it is missing
	}
	if _, err := mt.store.Write(context.Background(), gitstore.WriteInput{Path: "/late.md", Content: "hello world\n", Actor: testActor}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("J")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := *mt.memory(t, "/late.md").Content; got != "Jello world\n" {
		t.Errorf("the store holds %q, want the other writer's content changed at its first byte", got)
	}
}

// TestRenameOverDeletedSource: a rename over another memory writes the target, then
// deletes the source. If another writer deleted the source after the mount last looked, the
// rename still succeeds: the content is under the new name, and the open file's close does not
// bring the old name back.
func TestRenameOverDeletedSource(t *testing.T) {
	mt := mountNew(t, gitstore.Policy{}, Options{CacheFor: time.Minute})
	ctx := context.Background()
	for _, p := range []string{"/a.md", "/b.md"} {
		if _, err := mt.store.Write(ctx, gitstore.WriteInput{Path: p, Content: "old " + p + "\n", Actor: testActor}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(filepath.Join(mt.dir, "a.md"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("new\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := mt.store.Delete(ctx, gitstore.DeleteInput{Path: "/a.md", Actor: testActor}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(mt.dir, "a.md"), filepath.Join(mt.dir, "b.md")); err != nil {
		t.Fatalf("the rename of a memory that another writer deleted: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close after the rename: %v", err)
	}
	wantFiles(t, mt.files(t), map[string]string{"/b.md": "new\n"})
	if got, err := os.ReadFile(filepath.Join(mt.dir, "b.md")); err != nil || string(got) != "new\n" {
		t.Errorf("the mount reads b.md as %q, %v", got, err)
	}
}

// TestIsScratch: editors' and tools' names are scratch; ordinary names, hidden ones
// included, are not.
func TestIsScratch(t *testing.T) {
	for name, want := range map[string]bool{
		".a.md.swp": true, ".a.md.swo": true, ".a.md.swx": true, ".a.md.svz": true, "a.md~": true, "4913": true,
		".#a.md": true, "#a.md#": true, "sedAb3dEf": true, "sed4Xk2Qz": true, "a.md.tmp": true, "a.md.tmp.123.456": true,
		".goutputstream-ABC": true,
		"a.md":               false, ".schema.sql": false, ".logo.svg": false, ".deps.sum": false, "sedentary": false, "sedimentx": false,
		".tmp": false, "notes.md": false, ".hidden": false, "~": false,
	} {
		if got := IsScratch(name); got != want {
			t.Errorf("IsScratch(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestMountEdges: what a review found. A file renamed while open with unsaved writes keeps
// them; rm -r works after the listings expired; O_EXCL refuses a name another writer made;
// folders that the store holds are not held by the mount too; an outside umount ends the
// mount cleanly.
func TestMountEdges(t *testing.T) {
	mt := mountNew(t, gitstore.Policy{}, Options{CacheFor: 50 * time.Millisecond})
	ctx := context.Background()
	api := func(path, content string) {
		t.Helper()
		if _, err := mt.store.Write(ctx, gitstore.WriteInput{Path: path, Content: content, Actor: testActor}); err != nil {
			t.Fatal(err)
		}
	}
	api("/a.md", "old\n")
	f, err := os.OpenFile(filepath.Join(mt.dir, "a.md"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new\n")
	if err := os.Rename(filepath.Join(mt.dir, "a.md"), filepath.Join(mt.dir, "b.md")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, mt.files(t), map[string]string{"/b.md": "old\nnew\n"})

	api("/p/q/x.md", "x\n")
	api("/p/q/y.md", "y\n")
	mt.sh(t, `rm p/q/x.md; sleep 0.2; rm p/q/y.md; sleep 0.2; test -d p/q; rmdir p/q; sleep 0.2; test -d p; rmdir p; test ! -e p`)

	p := filepath.Join(mt.dir, "excl.md")
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	api("/excl.md", "precious\n")
	if _, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); !errors.Is(err, os.ErrExist) {
		t.Errorf("O_EXCL over another writer's memory: %v, want EEXIST", err)
	}
	if got := *mt.memory(t, "/excl.md").Content; got != "precious\n" {
		t.Errorf("after O_EXCL the memory holds %q", got)
	}

	mt.sh(t, `mkdir -p d1/d2 && echo x > d1/d2/f.md && mkdir e`)
	mt.m.fs.mu.Lock()
	held := fmt.Sprint(mt.m.fs.dirs)
	mt.m.fs.mu.Unlock()
	if held != "map[e:true]" {
		t.Errorf("the mount holds the folders %s, want only the empty one", held)
	}

	if err := syscall.Unmount(mt.dir, 0); err != nil {
		t.Fatal(err)
	}
	mt.m.Wait()
	if err := mt.m.Unmount(ctx); err != nil {
		t.Errorf("Unmount after an outside umount: %v", err)
	}
}

// sedWordTemp tells whether versions (newest first) are those of sed -i whose temporary file
// got six lower-case letters: stored, the memory written, the file deleted.
func sedWordTemp(versions []string) bool {
	if len(versions) != 3 || versions[1] != "modified /a.md" {
		return false
	}
	name, ok := strings.CutPrefix(versions[2], "created /")
	return ok && versions[0] == "deleted /"+name && regexp.MustCompile(`^sed[a-z]{6}$`).MatchString(name)
}

// TestMountSedLowerCaseTemp: a file whose name is sed's kind but all lower-case is stored,
// however it is created (exclusively, under umask 077, as sed makes its own), and sed's way
// of writing through such a file gives the right content and keeps the memory's id.
func TestMountSedLowerCaseTemp(t *testing.T) {
	mt := mountNew(t, gitstore.Policy{}, Options{})
	mt.sh(t, `printf 'hello\n' > a.md`)
	id := mt.memory(t, "/a.md").ID
	tmp := filepath.Join(mt.dir, "seduratub")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("HELLO\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Chmod(0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(mt.dir, "a.md")); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, mt.files(t), map[string]string{"/a.md": "HELLO\n"})
	if got := mt.memory(t, "/a.md").ID; got != id {
		t.Errorf("the rename made memory %s of /a.md, want it to stay %s", got, id)
	}

	mt.sh(t, `umask 077; set -C; printf 'a word\n' > sediments; printf 'b word\n' > seduction`)
	wantFiles(t, mt.files(t), map[string]string{"/a.md": "HELLO\n", "/sediments": "a word\n", "/seduction": "b word\n"})
}
