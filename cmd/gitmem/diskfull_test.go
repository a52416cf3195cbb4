package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDiskFullCLI: a put on a full disk says so and names the data directory; what was
// written before is there, and once there is space puts work again. It mounts a small
// tmpfs, so it needs root; it skips otherwise.
func TestDiskFullCLI(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a full disk is made with a small tmpfs, which needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v: %s)", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	c := &cli{t: t, data: filepath.Join(dir, "data")}
	c.ok("", "stores", "create", "notes")
	c.ok("kept\n", "put", "notes", "/kept.md")

	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{4096, 1} {
		for {
			if _, err := f.Write(make([]byte, n)); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
	f.Close()

	msg := c.fails(strings.Repeat("x", 50_000), "put", "notes", "/full.md")
	mustContain(t, "put on a full disk", msg, "no space left on device in the data directory", "nothing was changed", c.data)
	if strings.Contains(msg, "internal") {
		t.Errorf("put on a full disk: %q", msg)
	}

	os.Remove(filler)
	mustContain(t, "cat after space was freed", c.ok("", "cat", "notes", "/kept.md"), "kept")
	c.ok("now\n", "put", "notes", "/full.md")
}
