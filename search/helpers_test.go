package search

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/gitstore"
)

// quietLog drops the indexers' logs, which the tests provoke on purpose.
var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

var actor = gitstore.Actor{Type: gitstore.APIActor, ID: "apikey_01TESTKEY0000000000000000"}

// fixture is a data directory with one store and the search service over it.
type fixture struct {
	t    testing.TB
	ctx  context.Context
	data *gitstore.DataDir
	st   *gitstore.Store
	svc  *Service
}

func newFixture(t testing.TB, opts Options) *fixture {
	t.Helper()
	return openFixture(t, t.TempDir(), "", opts)
}

// openFixture opens dir (creating a store if storeID is "") and a service over it; both
// are closed when the test ends.
func openFixture(t testing.TB, dir, storeID string, opts Options) *fixture {
	t.Helper()
	ctx := context.Background()
	data, err := gitstore.Open(ctx, dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: ctx, data: data}
	if storeID == "" {
		f.st, err = data.CreateStore(ctx, gitstore.CreateStoreInput{Name: "test", Actor: actor})
	} else {
		f.st, err = data.Store(ctx, storeID)
	}
	if err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = quietLog
	}
	f.svc = New(data, opts)
	t.Cleanup(f.close)
	return f
}

func (f *fixture) close() {
	if f.svc != nil {
		if err := f.svc.Close(); err != nil {
			f.t.Errorf("close search: %v", err)
		}
		f.svc = nil
	}
	if f.data != nil {
		if err := f.data.Close(); err != nil {
			f.t.Errorf("close data: %v", err)
		}
		f.data = nil
	}
}

func (f *fixture) write(path, content string) string {
	f.t.Helper()
	res, err := f.st.Write(f.ctx, gitstore.WriteInput{Path: path, Content: content, Actor: actor})
	if err != nil {
		f.t.Fatalf("write %s: %v", path, err)
	}
	return res.Memory.ID
}

func (f *fixture) writeAll(files map[string]string) {
	f.t.Helper()
	for path, content := range files {
		f.write(path, content)
	}
}

func (f *fixture) search(q string) *Result {
	f.t.Helper()
	return f.searchReq(Request{Query: q})
}

func (f *fixture) searchReq(req Request) *Result {
	f.t.Helper()
	res, err := f.svc.Search(f.ctx, f.st.ID(), req)
	if err != nil {
		f.t.Fatalf("search %q: %v", req.Query, err)
	}
	return res
}

// paths lists the hits' paths, best first.
func paths(r *Result) []string {
	out := []string{}
	for _, h := range r.Hits {
		out = append(out, h.Path)
	}
	return out
}

func (f *fixture) expect(q string, want ...string) {
	f.t.Helper()
	got := paths(f.search(q))
	if want == nil {
		want = []string{}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		f.t.Errorf("search %q:\n got  %q\n want %q", q, got, want)
	}
}

// expectSet is expect without regard to order.
func (f *fixture) expectSet(q string, want ...string) {
	f.t.Helper()
	got := map[string]bool{}
	for _, p := range paths(f.search(q)) {
		got[p] = true
	}
	if len(got) != len(want) {
		f.t.Errorf("search %q: got %d hits %v, want %q", q, len(got), got, want)
		return
	}
	for _, w := range want {
		if !got[w] {
			f.t.Errorf("search %q: got %v, want %q", q, got, want)
			return
		}
	}
}

// gitIn runs the real git CLI in dir.
func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Ann Editor", "GIT_AUTHOR_EMAIL=ann@example.com",
		"GIT_COMMITTER_NAME=Ann Editor", "GIT_COMMITTER_EMAIL=ann@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// filler is n distinct paragraphs of plain text: memories that should match nothing the
// tests search for.
func filler(i int) string {
	return fmt.Sprintf("Filler memory %d.\nNothing to see in paragraph %d; the quick brown fox jumps over the lazy dog.\n", i, i)
}
