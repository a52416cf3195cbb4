package fsmount

import (
	"context"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// Paths here are relative to the store's root, without a leading "/": "" is the root,
// "notes/a.md" the memory /notes/a.md.

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func parentOf(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}

// scratchNames are the names that editors and tools give the files they keep beside the
// ones they edit: vim's swap files (.a.md.swp, .swo, ..., .swa, .swx, .svz), its write test
// (4913) and backups (a.md~), emacs's lock and autosave files (.#a.md, #a.md#), and
// temporary files written to be renamed over their target (a.md.tmp, a.md.tmp.123.456,
// .goutputstream-ABC). Narrow on purpose: a file of such a name is never stored.
var scratchNames = regexp.MustCompile(`^(.+~|\..+\.(sw[a-px]|svz)|4913|\.#.+|#.+#|.+\.tmp|.+\.tmp\..+|\.goutputstream-.+|\.~lock\..+#)$`)

// sedTemp is the name of sed -i's temporary file: sed and six random letters and digits.
var sedTemp = regexp.MustCompile(`^sed[A-Za-z0-9]{6}$`)

// IsScratch tells whether a file name is one that stays in the mount and never reaches the
// store. sed's names are told from words (sedentary) by the capital or digit that six random
// characters nearly always have.
func IsScratch(name string) bool {
	if sedTemp.MatchString(name) {
		return strings.ContainsAny(name[3:], "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
	}
	return scratchNames.MatchString(name)
}

// entry is a name in a folder as the store lists it.
type entry struct {
	dir bool
	mem *gitstore.Memory // for a memory
}

// listing is a folder's entries, and when the store was asked.
type listing struct {
	at      time.Time
	entries map[string]entry
}

// listingOf returns the entries that the store holds in folder dir, reusing a listing
// younger than CacheFor.
func (m *mountFS) listingOf(ctx context.Context, dir string) (map[string]entry, error) {
	m.mu.Lock()
	l, ok := m.listings[dir]
	m.mu.Unlock()
	if ok && time.Since(l.at) < m.opts.CacheFor {
		return l.entries, nil
	}
	prefix := "/"
	if dir != "" {
		prefix = "/" + dir + "/"
	}
	entries := map[string]entry{}
	opts := gitstore.ListOptions{PathPrefix: prefix, Depth: 1, Limit: 1000}
	for {
		page, err := m.opts.Reader.List(ctx, opts)
		if gitstore.IsKind(err, gitstore.KindInvalid) && dir != "" {
			break // a name the store cannot hold has nothing below it
		}
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			if it.Memory != nil {
				entries[path.Base(it.Memory.Path)] = entry{mem: it.Memory}
			} else {
				entries[path.Base(strings.TrimSuffix(it.Prefix, "/"))] = entry{dir: true}
			}
		}
		if page.NextCursor == "" {
			break
		}
		opts.Cursor = page.NextCursor
	}
	m.mu.Lock()
	m.listings[dir] = listing{at: time.Now(), entries: entries}
	m.mu.Unlock()
	return entries, nil
}

// wrote records in the cached listings a memory written here, so that the next look sees it
// without asking the store again. Listings are replaced, not changed: readers hold them
// without the lock.
func (m *mountFS) wrote(rel string, mem gitstore.Memory, content string) {
	m.contents.put(mem.ContentSHA256, content)
	m.mu.Lock()
	defer m.mu.Unlock()
	for dir := parentOf(rel); dir != ""; dir = parentOf(dir) {
		delete(m.dirs, dir) // the store holds it now
	}
	m.relist(parentOf(rel), func(entries map[string]entry) { entries[baseOf(rel)] = entry{mem: &mem} })
	for dir := parentOf(rel); dir != ""; dir = parentOf(dir) {
		m.relist(parentOf(dir), func(entries map[string]entry) { entries[baseOf(dir)] = entry{dir: true} })
	}
}

// removed records in the cached listing of its folder a memory (or folder) deleted here.
func (m *mountFS) removed(rel string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.relist(parentOf(rel), func(entries map[string]entry) { delete(entries, baseOf(rel)) })
}

// relist replaces the cached listing of dir, if there is one, by a copy that change made.
// m.mu is held.
func (m *mountFS) relist(dir string, change func(map[string]entry)) {
	l, ok := m.listings[dir]
	if !ok {
		return
	}
	entries := make(map[string]entry, len(l.entries)+1)
	for k, v := range l.entries {
		entries[k] = v
	}
	change(entries)
	m.listings[dir] = listing{at: l.at, entries: entries}
}

// changed forgets the listings after a change made here, so that the next look sees it.
func (m *mountFS) changed() {
	m.mu.Lock()
	clear(m.listings)
	m.mu.Unlock()
}

// kind is what a path is in the mount.
type kind int

const (
	none kind = iota
	file
	folder
)

// what tells what rel is: a file held here, a memory, a folder, or nothing; for a memory,
// its metadata.
func (m *mountFS) what(ctx context.Context, rel string) (kind, *gitstore.Memory, *localFile, error) {
	if rel == "" {
		return folder, nil, nil, nil
	}
	m.mu.Lock()
	lf, isLocal := m.local[rel]
	_, isAway := m.away[rel]
	isDir := m.dirs[rel]
	m.mu.Unlock()
	if isLocal {
		return file, nil, lf, nil
	}
	entries, err := m.listingOf(ctx, parentOf(rel))
	if err != nil {
		return none, nil, nil, err
	}
	e, ok := entries[path.Base(rel)]
	switch {
	case ok && e.dir:
		return folder, nil, nil, nil
	case ok && !isAway:
		return file, e.mem, nil, nil
	case isDir:
		return folder, nil, nil, nil
	}
	return none, nil, nil, nil
}

// isEmpty tells whether folder dir holds nothing, in the store or here.
func (m *mountFS) isEmpty(ctx context.Context, dir string) (bool, error) {
	entries, err := m.listingOf(ctx, dir)
	if err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range entries {
		if _, away := m.away[join(dir, name)]; !away {
			return false, nil
		}
	}
	below := dir + "/"
	for p := range m.local {
		if strings.HasPrefix(p, below) {
			return false, nil
		}
	}
	for p := range m.dirs {
		if strings.HasPrefix(p, below) {
			return false, nil
		}
	}
	return true, nil
}

// content returns a file's content and the time it last changed: a local file's, or the
// memory's (its content from the cache when the listing's hash is in it). A memory that the
// listing does not show (yet) is asked of the store.
func (m *mountFS) content(ctx context.Context, rel string) ([]byte, time.Time, error) {
	k, mem, lf, err := m.what(ctx, rel)
	if err != nil {
		return nil, time.Time{}, err
	}
	if lf != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		return append([]byte(nil), lf.data...), lf.mtime, nil
	}
	if k == file {
		if c, ok := m.contents.get(mem.ContentSHA256); ok {
			return []byte(c), mem.UpdatedAt, nil
		}
	}
	got, err := m.opts.Reader.GetByPath(ctx, "/"+rel, true)
	if err != nil {
		return nil, time.Time{}, err
	}
	m.contents.put(got.ContentSHA256, *got.Content)
	return []byte(*got.Content), got.UpdatedAt, nil
}

// moveLocal moves what the mount holds below folder from (and from itself) to below to.
func (m *mountFS) moveLocal(from, to string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	move := func(p string) (string, bool) {
		if p == from {
			return to, true
		}
		if strings.HasPrefix(p, from+"/") {
			return to + p[len(from):], true
		}
		return "", false
	}
	for p, lf := range m.local {
		if q, ok := move(p); ok {
			delete(m.local, p)
			m.local[q] = lf
		}
	}
	for p := range m.dirs {
		if q, ok := move(p); ok {
			delete(m.dirs, p)
			m.dirs[q] = true
		}
	}
}

// keepFolder keeps folder dir visible after its last memory left it: git has no empty
// folders, but rm -r and mv expect the folder to stay until rmdir.
func (m *mountFS) keepFolder(dir string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for ; dir != ""; dir = parentOf(dir) {
		m.dirs[dir] = true // and its parents: they may have held nothing else either
	}
}

// contentCache keeps memories' content by hash, to a bound in bytes: a read that the
// listing says is unchanged is not asked of the store (a server, over the network) again.
type contentCache struct {
	mu    sync.Mutex
	max   int
	size  int
	items map[string]string
}

func newContentCache(max int) *contentCache {
	return &contentCache{max: max, items: map[string]string{}}
}

func (c *contentCache) get(sha string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.items[sha]
	return s, ok && sha != ""
}

func (c *contentCache) put(sha, content string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[sha]; ok || sha == "" || len(content) > c.max {
		return
	}
	for k, v := range c.items { // evict any until it fits: recency matters little here
		if c.size+len(content) <= c.max {
			break
		}
		delete(c.items, k)
		c.size -= len(v)
	}
	c.items[sha] = content
	c.size += len(content)
}
