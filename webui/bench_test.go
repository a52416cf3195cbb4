package webui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gitmem/gitmem/gitstore"
)

// BenchmarkPages renders the UI's pages server-side (the handler, no network) in a store of
// 10,000 memories in 100 folders, beside the API's JSON read of the same memory as the
// baseline of the same run:
//
//	go test ./webui -run '^$' -bench Pages -benchtime 2000x
func BenchmarkPages(b *testing.B) {
	e := start(b)
	ctx := context.Background()
	st := e.store("", "bench")
	s, err := e.data.Store(ctx, st)
	if err != nil {
		b.Fatal(err)
	}
	const n = 10_000
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				_, err := s.Write(ctx, gitstore.WriteInput{Path: fmt.Sprintf("/projects/p%03d/n%05d.md", i/100, i),
					Content: fmt.Sprintf("# Memory %d\n\n%s", i, strings.Repeat("The user prefers short answers. ", 32)),
					Actor:   gitstore.Actor{Type: gitstore.SessionActor, ID: fmt.Sprintf("sesn_%d", i%8)}})
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	m, err := s.GetByPath(ctx, "/projects/p050/n05000.md", false)
	if err != nil {
		b.Fatal(err)
	}
	base := "/ui/stores/" + st
	for _, p := range []struct{ name, path string }{
		{"api_get_memory", "/v1/memory_stores/" + st + "/memories/" + m.ID + "?view=full"},
		{"stores", "/ui/"},
		{"root_folder", base},
		{"folder_of_100", base + "?prefix=/projects/p050/"},
		{"memory", base + "/memories/" + m.ID},
		{"history", base + "/memories/" + m.ID + "/history"},
		{"blame", base + "/memories/" + m.ID + "/blame"},
		{"activity", base + "/activity"},
		{"activity_one_session", base + "/activity?session=sesn_3"},
		{"activity_folder", base + "/activity?prefix=/projects/p099/"},
	} {
		b.Run(p.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", p.path, nil)
			req.Host = "127.0.0.1"
			for b.Loop() {
				w := httptest.NewRecorder()
				e.h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("%s: %d %.300s", p.path, w.Code, w.Body.String())
				}
			}
		})
	}
}
