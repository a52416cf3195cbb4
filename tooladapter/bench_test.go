package tooladapter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkMemoryTool measures the memory tool's commands on a store of 1,000 memories,
// against the baseline of what the reference implementation does for a write: a temporary
// file, written, fsynced and renamed into place.
//
//	go test ./tooladapter -run '^$' -bench . -benchtime 300x
func BenchmarkMemoryTool(b *testing.B) {
	seed := map[string]string{}
	for i := 0; i < 1000; i++ {
		seed[fmt.Sprintf("projects/p%02d/note%03d.md", i%50, i)] = fmt.Sprintf("line one of note %d\nline two\nline three\n", i)
	}
	s, _ := newTestSession(b, seed)
	ctx := context.Background()
	run := func(b *testing.B, input func(i int) string) {
		b.Helper()
		for i := 0; b.Loop(); i++ {
			res, err := s.Memory(ctx, []byte(input(i)))
			if err != nil || res.IsError {
				b.Fatalf("%s: %v %s", input(i), err, res.Content)
			}
		}
	}
	b.Run("create", func(b *testing.B) {
		run(b, func(i int) string {
			return fmt.Sprintf(`{"command":"create","path":"/memories/new/b%d/n%d.md","file_text":"a new note\n"}`, b.N, i)
		})
	})
	b.Run("str_replace", func(b *testing.B) {
		// Each memory goes from "line two" to "line 2" and back, so that every call changes it.
		words := []string{"line two", "line 2"}
		run(b, func(i int) string {
			return fmt.Sprintf(`{"command":"str_replace","path":"/memories/projects/p07/note%03d.md","old_str":%q,"new_str":%q}`,
				7+50*(i%20), words[i/20%2], words[(i/20+1)%2])
		})
	})
	b.Run("insert", func(b *testing.B) {
		run(b, func(i int) string {
			return fmt.Sprintf(`{"command":"insert","path":"/memories/projects/p03/note%03d.md","insert_line":1,"insert_text":"x %d"}`, 3+50*(i%20), i)
		})
	})
	b.Run("view-file", func(b *testing.B) {
		run(b, func(i int) string {
			return fmt.Sprintf(`{"command":"view","path":"/memories/projects/p%02d/note%03d.md"}`, i%50, i%1000/50*50+i%50)
		})
	})
	b.Run("view-folder", func(b *testing.B) {
		run(b, func(i int) string { return fmt.Sprintf(`{"command":"view","path":"/memories/projects/p%02d"}`, i%50) })
	})
	b.Run("view-root-1000", func(b *testing.B) {
		run(b, func(int) string { return `{"command":"view","path":"/memories"}` })
	})
	b.Run("baseline-file-write-fsync", func(b *testing.B) {
		dir := b.TempDir()
		for i := 0; b.Loop(); i++ {
			if err := writeFileSynced(filepath.Join(dir, fmt.Sprintf("n%d.md", i)), []byte("a new note\n")); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// writeFileSynced writes a file the way the reference implementation does.
func writeFileSynced(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
