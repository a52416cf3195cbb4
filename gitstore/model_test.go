package gitstore

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// model is the simplest store that could work: maps, and the list of versions.
type model struct {
	mems     map[string]*modelMem // by id, live only
	byPath   map[string]string    // live path -> id
	versions []modelVersion       // oldest first
}

type modelMem struct {
	id, path, content, version string
}

type modelVersion struct {
	id, memory, path, sha string
	op                    Operation
	size                  int
}

func newModel() *model {
	return &model{mems: map[string]*modelMem{}, byPath: map[string]string{}}
}

// conflict returns the path of a memory that is path itself, one of its parents, or
// below it; ignoring the memory self.
func (m *model) conflict(path, self string) string {
	for p, id := range m.byPath {
		if id == self {
			continue
		}
		if p == path || strings.HasPrefix(path, p+"/") || strings.HasPrefix(p, path+"/") {
			return p
		}
	}
	return ""
}

func (m *model) record(v modelVersion) { m.versions = append(m.versions, v) }

// modelPaths overlap on purpose: parents and children of each other, and siblings.
var modelPaths = []string{"/a.md", "/a", "/a/b.md", "/a/b", "/a/b/c.md", "/d/e.md", "/d/f.md",
	"/d/g/h.md", "/notes/x.md", "/notes-x/y.md", "/n/o/t/e/s.md", "/é/ü.md", "/p/1.md", "/p/2.md",
	"/p/3.md", "/p/q/4.md", "/p/q/5.md", "/z.md"}

var modelContents = []string{"", "one", "two", "three\nlines\n", "naïve café"}

const modelSeedEnv = "GITMEM_MODEL_SEED"

// TestModel runs a seeded random sequence of operations against the store and the model,
// and checks after every operation that both answered alike, and every so often that their
// whole state and history agree: also across a reopen and a rebuild of the catalog.
func TestModel(t *testing.T) {
	seed := int64(1)
	if s := os.Getenv(modelSeedEnv); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	steps := 3000
	if testing.Short() {
		steps = 600
	}
	t.Logf("seed %d (set %s to reproduce)", seed, modelSeedEnv)
	rng := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	dir := t.TempDir()
	d, err := Open(ctx, dir, Options{MaxPacks: 6})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "model", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	m := newModel()
	for i := 0; i < steps; i++ {
		step(t, ctx, rng, s, m, i)
		if i%500 == 499 {
			compareAll(t, ctx, s, m)
		}
	}
	compareAll(t, ctx, s, m)
	ops := map[Operation]int{}
	for _, v := range m.versions {
		ops[v.op]++
	}
	t.Logf("%d steps made %d versions %v; %d memories live", steps, len(m.versions), ops, len(m.mems))
	if ops[OpCreated] == 0 || ops[OpModified] == 0 || ops[OpDeleted] == 0 {
		t.Fatalf("the sequence did not exercise every operation: %v", ops)
	}

	// Reopen: everything must be read back from disk alike.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if d, err = Open(ctx, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if s, err = d.Store(ctx, s.ID()); err != nil {
		t.Fatal(err)
	}
	compareAll(t, ctx, s, m)

	// Rebuild the catalog from history: same ids, same versions.
	if err := d.Reindex(ctx, s.ID(), nil); err != nil {
		t.Fatal(err)
	}
	compareAll(t, ctx, s, m)
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.Intn(len(xs))] }

// randomPrecondition returns none, not_exists (if allowed), the right hash or a wrong one.
func randomPrecondition(rng *rand.Rand, current string, notExists bool) *Precondition {
	switch rng.Intn(5) {
	case 0:
		if notExists {
			return &Precondition{Type: NotExists}
		}
	case 1:
		return &Precondition{Type: ContentSHA256, ContentSHA256: sha256Hex(current)}
	case 2:
		return &Precondition{Type: ContentSHA256, ContentSHA256: sha256Hex("wrong" + current)}
	}
	return nil
}

func step(t *testing.T, ctx context.Context, rng *rand.Rand, s *Store, m *model, i int) {
	t.Helper()
	var live []*modelMem
	for _, id := range sortedKeys(m.mems) {
		live = append(live, m.mems[id])
	}
	switch op := rng.Intn(10); {
	case op < 5: // write by path
		path, content := pick(rng, modelPaths), pick(rng, modelContents)
		cur := ""
		if id, ok := m.byPath[path]; ok {
			cur = m.mems[id].content
		}
		pre := randomPrecondition(rng, cur, true)
		res, err := s.Write(ctx, WriteInput{Path: path, Content: content, Precondition: pre, Actor: apiActor})
		want := m.write(path, content, pre)
		check(t, i, fmt.Sprintf("write %s %q %+v", path, content, pre), err, want, res, m)
	case op < 8 && len(live) > 0: // update content and/or path
		mem := pick(rng, live)
		in := UpdateInput{ID: mem.id, Actor: apiActor, Precondition: randomPrecondition(rng, mem.content, false)}
		if rng.Intn(3) > 0 {
			c := pick(rng, modelContents)
			in.Content = &c
		}
		if rng.Intn(2) == 0 {
			p := pick(rng, modelPaths)
			in.Path = &p
		}
		if rng.Intn(4) == 0 {
			in.ID, in.FromPath = "", mem.path
		}
		res, err := s.UpdateMemory(ctx, in)
		want := m.update(mem, in)
		check(t, i, fmt.Sprintf("update %s content=%v path=%v %+v", mem.path, deref(in.Content), deref(in.Path), in.Precondition), err, want, res, m)
	case op < 9 && len(live) > 0: // delete by id or path
		mem := pick(rng, live)
		in := DeleteInput{ID: mem.id, Actor: apiActor}
		if rng.Intn(2) == 0 {
			in.ID, in.Path = "", mem.path
		}
		switch rng.Intn(3) {
		case 0:
			in.ExpectedSHA256 = sha256Hex(mem.content)
		case 1:
			in.ExpectedSHA256 = sha256Hex("wrong")
		}
		v, err := s.Delete(ctx, in)
		var want Kind
		if in.ExpectedSHA256 != "" && in.ExpectedSHA256 != sha256Hex(mem.content) {
			want = KindPreconditionFailed
		}
		if got := ErrorKind(err); got != want {
			t.Fatalf("step %d: delete %s: error %v (kind %q), want kind %q", i, mem.path, err, got, want)
		}
		if err == nil {
			m.record(modelVersion{id: v.ID, memory: mem.id, path: mem.path, op: OpDeleted})
			delete(m.byPath, mem.path)
			delete(m.mems, mem.id)
		}
	default: // a bad request changes nothing
		bad := pick(rng, []string{"a.md", "/a//b.md", "/a/./b.md", "/../x", "/.gitmem/x", "/x\x00y", "/caf\u0065\u0301.md", "/a\u2028b", ""})
		before := s.Head()
		_, err := s.Write(ctx, WriteInput{Path: bad, Content: "x", Actor: apiActor})
		if !IsKind(err, KindInvalid) {
			t.Fatalf("step %d: write to %q: %v, want an invalid request", i, bad, err)
		}
		if s.Head() != before {
			t.Fatalf("step %d: a refused write moved main", i)
		}
	}
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// modelOutcome is what the model expects of a write: an error kind, or a memory and
// whether a version was made.
type modelOutcome struct {
	kind    Kind
	mem     *modelMem
	version bool
}

func (m *model) write(path, content string, pre *Precondition) modelOutcome {
	if id, ok := m.byPath[path]; ok {
		mem := m.mems[id]
		if pre != nil && pre.Type == NotExists {
			return modelOutcome{kind: KindPreconditionFailed}
		}
		if mem.content == content {
			return modelOutcome{mem: mem}
		}
		if pre != nil && pre.ContentSHA256 != sha256Hex(mem.content) {
			return modelOutcome{kind: KindPreconditionFailed}
		}
		mem.content = content
		return modelOutcome{mem: mem, version: true}
	}
	if pre != nil && pre.Type == ContentSHA256 {
		return modelOutcome{kind: KindPreconditionFailed}
	}
	if m.conflict(path, "") != "" {
		return modelOutcome{kind: KindPathConflict}
	}
	mem := &modelMem{path: path, content: content}
	return modelOutcome{mem: mem, version: true}
}

func (m *model) update(mem *modelMem, in UpdateInput) modelOutcome {
	content, path := mem.content, mem.path
	if in.Content != nil {
		content = *in.Content
	}
	if in.Path != nil {
		path = *in.Path
	}
	if pre := in.Precondition; pre != nil && pre.ContentSHA256 != sha256Hex(mem.content) {
		if content == mem.content && path == mem.path {
			return modelOutcome{mem: mem}
		}
		return modelOutcome{kind: KindPreconditionFailed}
	}
	if content == mem.content && path == mem.path {
		return modelOutcome{mem: mem}
	}
	if path != mem.path && m.conflict(path, mem.id) != "" {
		return modelOutcome{kind: KindPathConflict}
	}
	mem.content = content
	if path != mem.path {
		delete(m.byPath, mem.path)
		mem.path = path
	}
	return modelOutcome{mem: mem, version: true}
}

// check compares the store's answer to the model's, and applies it to the model.
func check(t *testing.T, i int, what string, err error, want modelOutcome, res WriteResult, m *model) {
	t.Helper()
	if got := ErrorKind(err); got != want.kind {
		t.Fatalf("step %d: %s: error %v (kind %q), want kind %q", i, what, err, got, want.kind)
	}
	if err != nil {
		return
	}
	if (res.Version != nil) != want.version {
		t.Fatalf("step %d: %s: made a version: %v, want %v", i, what, res.Version != nil, want.version)
	}
	mem := want.mem
	if mem.id == "" {
		mem.id = res.Memory.ID
		m.mems[mem.id] = mem
	}
	if res.Memory.ID != mem.id || res.Memory.Path != mem.path || res.Memory.ContentSHA256 != sha256Hex(mem.content) ||
		res.Memory.SizeBytes != len(mem.content) {
		t.Fatalf("step %d: %s: got memory %+v, want %+v", i, what, res.Memory, *mem)
	}
	m.byPath[mem.path] = mem.id
	if res.Version != nil {
		op := OpModified
		if mem.version == "" {
			op = OpCreated
		}
		mem.version = res.Version.ID
		m.record(modelVersion{id: res.Version.ID, memory: mem.id, path: mem.path, op: op,
			sha: sha256Hex(mem.content), size: len(mem.content)})
	}
	if res.Memory.VersionID != mem.version {
		t.Fatalf("step %d: %s: memory at version %s, want %s", i, what, res.Memory.VersionID, mem.version)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// compareAll checks every memory, every listing and the whole history against the model.
func compareAll(t *testing.T, ctx context.Context, s *Store, m *model) {
	t.Helper()
	for _, id := range sortedKeys(m.mems) {
		want := m.mems[id]
		got, err := s.Get(ctx, id, true)
		if err != nil {
			t.Fatalf("get %s (%s): %v", id, want.path, err)
		}
		if got.Path != want.path || *got.Content != want.content || got.VersionID != want.version ||
			got.ContentSHA256 != sha256Hex(want.content) || got.SizeBytes != len(want.content) {
			t.Fatalf("memory %s: got %+v %q, want %+v", id, got, *got.Content, *want)
		}
	}
	// Depth 0 from the root and below each directory, in small pages.
	prefixes := map[string]bool{"": true}
	for p := range m.byPath {
		segs := strings.Split(p, "/")
		for k := 2; k < len(segs); k++ {
			prefixes[strings.Join(segs[:k], "/")+"/"] = true
		}
	}
	for _, prefix := range sortedKeys(prefixes) {
		for _, depth := range []int{0, 1} {
			got := listAll(t, ctx, s, prefix, depth, 3)
			want := modelList(m, prefix, depth)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("list %q depth %d:\n got %v\nwant %v", prefix, depth, got, want)
			}
		}
	}
	// The whole history, newest first, in small pages.
	var got []string
	f := VersionFilter{Limit: 7}
	for {
		page, err := s.Versions(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Versions {
			got = append(got, fmt.Sprintf("%s %s %s %s %s %d", v.ID, v.MemoryID, v.Operation, v.Path, v.ContentSHA256, v.SizeBytes))
		}
		if page.NextCursor == "" {
			break
		}
		f.Cursor = page.NextCursor
	}
	var want []string
	for i := len(m.versions) - 1; i >= 0; i-- {
		v := m.versions[i]
		want = append(want, fmt.Sprintf("%s %s %s %s %s %d", v.id, v.memory, v.op, v.path, v.sha, v.size))
	}
	if len(got) != len(want) {
		t.Fatalf("history has %d versions, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("version %d (newest first):\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

// lister is a Store or a Snapshot.
type lister interface {
	List(ctx context.Context, opts ListOptions) (ListPage, error)
}

// listAll lists every path (and, with depth, prefix) below prefix, page by page.
func listAll(t *testing.T, ctx context.Context, s lister, prefix string, depth, limit int) []string {
	t.Helper()
	var out []string
	opts := ListOptions{PathPrefix: prefix, Depth: depth, Limit: limit}
	for {
		page, err := s.List(ctx, opts)
		if err != nil {
			t.Fatalf("list %q: %v", prefix, err)
		}
		for _, it := range page.Items {
			if it.Memory != nil {
				out = append(out, it.Memory.Path)
			} else {
				out = append(out, it.Prefix)
			}
		}
		if page.NextCursor == "" {
			return out
		}
		opts.Cursor = page.NextCursor
	}
}

func modelList(m *model, prefix string, depth int) []string {
	if prefix == "" {
		prefix = "/"
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range sortedKeys(m.byPath) {
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		item := p
		if rest := strings.Split(p[len(prefix):], "/"); depth > 0 && len(rest) > depth {
			item = prefix + strings.Join(rest[:depth], "/") + "/"
		}
		if !seen[item] {
			seen[item] = true
			out = append(out, item)
		}
	}
	return out
}
