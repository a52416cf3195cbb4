package durable

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// temps lists the temporary files left in dir.
func temps(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, TempPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestWriteFile: the file is complete with its mode once WriteFile returns, replaces the
// old one, and no temporary file is left.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := []byte(strings.Repeat("new content\n", 10000))
	if err := WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(data) {
		t.Fatalf("read %d bytes, want %d", len(got), len(data))
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if left := temps(t, dir); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestWriteFileError: a write that fails leaves the old file as it was and no temporary file.
func TestWriteFileError(t *testing.T) {
	dir := t.TempDir()
	// The target is a directory that is not empty: the rename fails after the temporary
	// file was written and fsynced.
	p := filepath.Join(dir, "target")
	if err := os.MkdirAll(filepath.Join(p, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("data"), 0o600); err == nil {
		t.Fatal("WriteFile over a directory succeeded")
	}
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		t.Errorf("the target changed: %v %v", fi, err)
	}
	if left := temps(t, dir); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	// A directory that does not exist: nothing is made.
	if err := WriteFile(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Fatal("WriteFile into a missing directory succeeded")
	}
}

// TestDiscard: a file discarded before Commit leaves the target as it was and no temporary
// file; Discard after Commit changes nothing.
func TestDiscard(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	f, err := Create(p, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half"))
	f.Discard()
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("discarded file exists: %v", err)
	}
	if left := temps(t, dir); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}

	f, err = Create(p, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("whole"))
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Discard()
	if got, _ := os.ReadFile(p); string(got) != "whole" {
		t.Errorf("after Commit and Discard the file holds %q", got)
	}
	if err := f.Commit(); err == nil {
		t.Error("a second Commit succeeded")
	}
}
