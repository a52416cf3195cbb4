package fsmount

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/client"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/httpapi"
	"github.com/gitmem/gitmem/tooladapter"
)

// BenchmarkMountWrite: one small memory written through the mount (open, write, close),
// beside the same write through the store in process, through the HTTP API, and a plain
// local file written as durably (write, fsync, close), in one run:
//
//	go test ./fsmount -run '^$' -bench MountWrite -benchtime 500x
//
// Each writes one of 100 paths in turn, so that every store holds 100 memories.
func BenchmarkMountWrite(b *testing.B) {
	content := strings.Repeat("a memory of about six hundred bytes. ", 20)[:600]
	path := func(i int) string { return fmt.Sprintf("m%03d.md", i%100) }
	ctx := context.Background()

	b.Run("plain-file", func(b *testing.B) {
		dir := b.TempDir()
		for i := range b.N {
			f, err := os.Create(filepath.Join(dir, path(i)))
			if err != nil {
				b.Fatal(err)
			}
			f.WriteString(content + fmt.Sprint(i))
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	mt := mountNew(b, gitstore.Policy{}, Options{})
	b.Run("store", func(b *testing.B) {
		for i := range b.N {
			if _, err := mt.store.Write(ctx, gitstore.WriteInput{Path: "/api/" + path(i), Content: content + fmt.Sprint(i), Actor: testActor}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("http-api", func(b *testing.B) {
		keys, err := apikeys.Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		hs := httptest.NewServer(httpapi.New(mt.data, keys, httpapi.Options{}))
		defer hs.Close()
		st := client.New(hs.URL, "").Store(mt.store.ID())
		for i := range b.N {
			if _, err := st.Write(ctx, gitstore.WriteInput{Path: "/http/" + path(i), Content: content + fmt.Sprint(i)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("mount", func(b *testing.B) {
		dir := filepath.Join(mt.dir, "mount")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for i := range b.N {
			if err := os.WriteFile(filepath.Join(dir, path(i)), []byte(content+fmt.Sprint(i)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkMountView: what an agent pays to see a store of 1,000 memories in 50 folders: a
// walk of the mount that lists every name with its size (as ls -lR or du -a does), against
// the memory tool's view of /memories (two levels, with sizes), in one run:
//
//	go test ./fsmount -run '^$' -bench MountView -benchtime 50x
func BenchmarkMountView(b *testing.B) {
	mt := mountNew(b, gitstore.Policy{}, Options{})
	ctx := context.Background()
	for i := range 1000 {
		if _, err := mt.store.Write(ctx, gitstore.WriteInput{Path: fmt.Sprintf("/f%02d/m%03d.md", i%50, i), Content: strings.Repeat("x", 300), Actor: testActor}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("mount-walk", func(b *testing.B) {
		for range b.N {
			n := 0
			err := filepath.WalkDir(mt.dir, func(p string, d os.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if _, err := d.Info(); err != nil {
					return err
				}
				n++
				return nil
			})
			if err != nil || n != 1051 {
				b.Fatalf("walked %d entries, %v", n, err)
			}
		}
	})
	b.Run("memory-tool-view", func(b *testing.B) {
		sess, err := tooladapter.NewSession(ctx, tooladapter.Options{Stores: []tooladapter.Attachment{{Store: mt.store}}})
		if err != nil {
			b.Fatal(err)
		}
		for range b.N {
			res, err := sess.Call(ctx, tooladapter.MemoryToolName, []byte(`{"command":"view","path":"/memories"}`))
			if err != nil || res.IsError {
				b.Fatalf("view: %v %s", err, res.Content)
			}
		}
	})
}
