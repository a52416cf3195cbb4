package fsmount

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/testlog"
)

var testActor = gitstore.Actor{Type: gitstore.SessionActor, ID: "sesn_mounttest"}

// needFUSE skips a test on a machine without /dev/fuse, saying so.
func needFUSE(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("this machine has no /dev/fuse (%v): the mount tests need FUSE", err)
	}
}

// mounted is a store mounted for a test.
type mounted struct {
	m     *Mount
	dir   string
	store *gitstore.Store
	data  *gitstore.DataDir
	log   *testlog.Buffer
}

// mountNew creates a store with policy and mounts it, changed by opts (Store, Log and Actor
// are set here); both go when the test ends.
func mountNew(t testing.TB, policy gitstore.Policy, opts Options) *mounted {
	t.Helper()
	needFUSE(t)
	ctx := context.Background()
	d, err := gitstore.Open(ctx, t.TempDir(), gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.CreateStore(ctx, gitstore.CreateStoreInput{Name: "notes", Policy: policy, Actor: testActor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() }) // after the unmount, which was registered later
	return (&mounted{store: st, data: d}).another(t, opts)
}

// another mounts the same store again, at a new directory, with opts.
func (mt *mounted) another(t testing.TB, opts Options) *mounted {
	t.Helper()
	out := &mounted{dir: filepath.Join(t.TempDir(), "mnt"), store: mt.store, data: mt.data, log: &testlog.Buffer{}}
	if err := os.Mkdir(out.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts.Store, opts.Actor = mt.store, testActor
	opts.Log = slog.New(slog.NewTextHandler(out.log, nil))
	m, err := New(out.dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	out.m = m
	t.Cleanup(func() {
		if err := m.Unmount(context.Background()); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return out
}

// sh runs a shell script in the mount and returns its output; it fails the test if the
// script fails.
func (mt *mounted) sh(t testing.TB, script string) string {
	t.Helper()
	// The shell changes into the mount itself: a child that this process forked into its own
	// FUSE mount (cmd.Dir) can deadlock the fork against the file system it serves.
	cmd := exec.Command("sh", "-ec", "cd \"$0\"\n"+script, mt.dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sh -c %q: %v\n%s\nmount log:\n%s", script, err, out, mt.log.String())
	}
	return string(out)
}

// files is every memory of the store: path -> content.
func (mt *mounted) files(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	opts := gitstore.ListOptions{Limit: 1000, WithContent: true}
	for {
		page, err := mt.store.List(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			out[it.Memory.Path] = *it.Memory.Content
		}
		if page.NextCursor == "" {
			return out
		}
		opts.Cursor = page.NextCursor
	}
}

// versions are the store's versions, newest first, as "operation path".
func (mt *mounted) versions(t testing.TB) []string {
	t.Helper()
	page, err := mt.store.Versions(context.Background(), gitstore.VersionFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range page.Versions {
		out = append(out, string(v.Operation)+" "+v.Path)
	}
	return out
}

// memory is the memory at path, or a failure.
func (mt *mounted) memory(t testing.TB, path string) gitstore.Memory {
	t.Helper()
	m, err := mt.store.GetByPath(context.Background(), path, true)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func wantFiles(t testing.TB, got map[string]string, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("store holds %d memories %v, want %d %v", len(got), keys(got), len(want), keys(want))
	}
	for p, c := range want {
		if got[p] != c {
			t.Errorf("%s = %q, want %q", p, got[p], c)
		}
	}
}

func keys(m map[string]string) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return strings.Join(ks, " ")
}
