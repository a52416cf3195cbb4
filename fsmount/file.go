package fsmount

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/gitmem/gitmem/gitstore"
)

// fileNode is a memory, or a file held here. While it is open, its handles share one
// buffer: the content when it was first opened, as written since. A close (flush) of a
// handle that wrote, or an fsync, writes the buffer to the store as one version.
//
// A refusal (by the store, or of a write past the size limit) lets go of the buffer at once:
// reads then see what the store holds. Every open that changed the refused buffer gets the
// refusal at its later writes and at its close, whichever open's close or fsync met it.
type fileNode struct {
	fs.Inode
	m *mountFS

	mu      sync.Mutex
	opens   int
	loaded  bool // data holds the content
	data    []byte
	mtime   time.Time
	dirty   bool             // data differs from what was last written
	changed map[*handle]bool // opens whose changes are not written yet: true if one wrote, false if it only truncated
}

var (
	_ fs.NodeOpener    = (*fileNode)(nil)
	_ fs.NodeGetattrer = (*fileNode)(nil)
	_ fs.NodeSetattrer = (*fileNode)(nil)
	_ fs.NodeReader    = (*fileNode)(nil)
	_ fs.NodeWriter    = (*fileNode)(nil)
	_ fs.NodeFlusher   = (*fileNode)(nil)
	_ fs.NodeFsyncer   = (*fileNode)(nil)
	_ fs.NodeReleaser  = (*fileNode)(nil)
)

// handle is an open file: whether it may write, and the refusal of what was changed through
// it, which its later writes and its close get too (those of other opens do not).
type handle struct {
	write  bool
	append bool // O_APPEND: writes go to the buffer's end, wherever the kernel thinks it is
	failed syscall.Errno
	opener uint32 // the thread that opened it, or 0 if unknown
}

// newHandle is the handle of an open by the caller of ctx.
func newHandle(ctx context.Context, write bool, flags uint32) *handle {
	h := &handle{write: write, append: flags&syscall.O_APPEND != 0}
	if c, ok := fuse.FromContext(ctx); ok {
		h.opener = c.Pid
	}
	return h
}

// openedBy tells whether the caller of ctx is of the process that opened h, or the mount
// cannot tell. FUSE names the calling thread, and a program's threads are one process (its
// thread group, read from /proc only here, at the rare close that needs it, not at opens).
func (h *handle) openedBy(ctx context.Context) bool {
	c, ok := fuse.FromContext(ctx)
	if !ok || h.opener == 0 || c.Pid == 0 {
		return true
	}
	opener, closer := threadGroup(h.opener), threadGroup(c.Pid)
	return opener == 0 || closer == 0 || opener == closer
}

// threadGroup is the process of thread tid, or 0 if it is gone or the mount cannot tell.
func threadGroup(tid uint32) int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

func (f *fileNode) rel() (string, bool) { return relOf(f.EmbeddedInode()) }

// attr fills out for the file: its open buffer's size, or the metadata given (of a memory
// or of a file held here), or else what the store says now.
func (f *fileNode) attr(ctx context.Context, out *fuse.Attr, mem *gitstore.Memory, lf *localFile) syscall.Errno {
	f.mu.Lock()
	if f.loaded {
		size, mtime := len(f.data), f.mtime
		f.mu.Unlock()
		f.m.fileAttr(out, size, mtime)
		return 0
	}
	f.mu.Unlock()
	if mem == nil && lf == nil {
		rel, ok := f.rel()
		if !ok {
			return syscall.ENOENT
		}
		k, m, l, err := f.m.what(ctx, rel)
		if err != nil {
			return f.m.refuse("getattr", rel, err)
		}
		if k != file {
			return syscall.ENOENT
		}
		mem, lf = m, l
	}
	if lf != nil {
		f.m.mu.Lock()
		size, mtime := len(lf.data), lf.mtime
		f.m.mu.Unlock()
		f.m.fileAttr(out, size, mtime)
		return 0
	}
	f.m.fileAttr(out, mem.SizeBytes, mem.UpdatedAt)
	return 0
}

func (f *fileNode) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	return f.attr(ctx, &out.Attr, nil, nil)
}

// load reads the content into the buffer if it is not there. f.mu is held.
func (f *fileNode) load(ctx context.Context) syscall.Errno {
	if f.loaded {
		return 0
	}
	rel, ok := f.rel()
	if !ok {
		return syscall.ENOENT
	}
	data, mtime, err := f.m.content(ctx, rel)
	if err != nil {
		return f.m.refuse("open", rel, err)
	}
	// The memory's own time, which stat shows when the file is closed: an editor that
	// compares the two does not think another program changed the file.
	f.data, f.loaded, f.mtime = data, true, mtime
	return 0
}

func (f *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	write := flags&syscall.O_ACCMODE != syscall.O_RDONLY
	if write && f.m.opts.ReadOnly {
		rel, _ := f.rel()
		f.m.log().Info("mount: refused, the mount is read-only", "op", "open", "path", "/"+rel)
		return nil, 0, syscall.EROFS
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.opens == 0 {
		f.loaded = false // a first open reads what the store holds now
	}
	h := newHandle(ctx, write, flags)
	if write && flags&syscall.O_TRUNC != 0 {
		f.data, f.loaded, f.dirty, f.mtime = nil, true, true, time.Now()
		f.changedBy(h, false)
	}
	if e := f.load(ctx); e != 0 {
		return nil, 0, e
	}
	f.opened()
	return h, 0, 0
}

// opened counts an open; the mount knows the open files, to name those whose changes an
// unmount drops. f.mu is held.
func (f *fileNode) opened() {
	if f.opens++; f.opens == 1 {
		f.m.mu.Lock()
		f.m.open[f] = true
		f.m.mu.Unlock()
	}
}

// changedBy notes that h changed the buffer, by a write or else by a truncation. f.mu is
// held.
func (f *fileNode) changedBy(h *handle, wrote bool) {
	if h == nil {
		return
	}
	if f.changed == nil {
		f.changed = map[*handle]bool{}
	}
	f.changed[h] = f.changed[h] || wrote
}

func (f *fileNode) Read(ctx context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.load(ctx); e != 0 {
		return nil, e
	}
	if off >= int64(len(f.data)) {
		return fuse.ReadResultData(nil), 0
	}
	end := min(off+int64(len(dest)), int64(len(f.data)))
	return fuse.ReadResultData(append([]byte(nil), f.data[off:end]...)), 0
}

// tooLarge refuses a size past the store's limit with EFBIG.
func (f *fileNode) tooLarge(size int64) syscall.Errno {
	if size <= gitstore.MaxContentBytes {
		return 0
	}
	rel, _ := f.rel()
	f.m.log().Warn("mount: refused, too large", "path", "/"+rel, "errno", "EFBIG", "size", size, "limit", gitstore.MaxContentBytes)
	return syscall.EFBIG
}

func (f *fileNode) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	h, _ := fh.(*handle)
	f.mu.Lock()
	defer f.mu.Unlock()
	if h != nil && h.failed != 0 {
		return 0, h.failed
	}
	if e := f.load(ctx); e != 0 {
		return 0, e
	}
	if h != nil && h.append {
		// The kernel's offset is the size it last saw, which a refusal since made wrong.
		off = int64(len(f.data))
	}
	end := off + int64(len(data))
	f.changedBy(h, true)
	if e := f.tooLarge(end); e != 0 {
		// The program's data comes in pieces: a file cut at the limit is not written, as
		// what the store refuses is not.
		f.refused(e)
		return 0, e
	}
	if end > int64(len(f.data)) {
		f.data = append(f.data, make([]byte, end-int64(len(f.data)))...)
	}
	copy(f.data[off:], data)
	f.dirty, f.mtime = true, time.Now()
	return uint32(len(data)), 0
}

func (f *fileNode) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		rel, _ := f.rel()
		if f.m.opts.ReadOnly {
			f.m.log().Info("mount: refused, the mount is read-only", "op", "truncate", "path", "/"+rel)
			return syscall.EROFS
		}
		h, _ := fh.(*handle)
		f.mu.Lock()
		if h != nil && h.failed != 0 {
			f.mu.Unlock()
			return h.failed
		}
		if e := f.tooLarge(int64(size)); e != 0 {
			f.mu.Unlock()
			return e // and nothing changes, as on any file system
		}
		if e := f.load(ctx); e != 0 {
			f.mu.Unlock()
			return e
		}
		if int(size) <= len(f.data) {
			f.data = f.data[:size]
		} else {
			f.data = append(f.data, make([]byte, int(size)-len(f.data))...)
		}
		f.dirty, f.mtime = true, time.Now()
		f.changedBy(h, true) // ftruncate: its close writes it, as a write's does
		var e syscall.Errno
		if f.opens == 0 { // truncate(2) of a closed file: written now
			e = f.commit(ctx)
			f.loaded = false
		}
		f.mu.Unlock()
		if e != 0 {
			return e
		}
	}
	// Modes, owners and times are not kept: git keeps none of them for a memory.
	return f.attr(ctx, &out.Attr, nil, nil)
}

// Flush is a close(2) of a descriptor: it writes the buffer if this open wrote to it. A
// close before any write does not: a shell opens the file of "echo hi > f" with O_TRUNC, and
// closes a copy of the descriptor before echo writes; writing the empty file then would make
// a version nobody meant. Release writes what no flush did (a file created or truncated and
// closed without a write: touch, : > f).
func (f *fileNode) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	h, ok := fh.(*handle)
	if !ok {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if h.failed != 0 {
		return h.failed // nothing changed through it since was kept either
	}
	if !f.changed[h] {
		return 0
	}
	if unfinishedRune(f.data) && !f.scratch() {
		// A character cut in two may yet be finished: a shell's child that exits closes
		// a copy of the descriptor between the two halves of
		// "{ printf 'caf\303'; sleep 0; printf '\251'; } > f". So the buffer stays for
		// the next close, an fsync or the last release to write. A child's close succeeds
		// (sleep and make check theirs); the opener's is refused, so that a program whose
		// last close this is learns that its content was not kept (the release then drops
		// it).
		rel, _ := f.rel()
		if !h.openedBy(ctx) {
			f.m.log().Debug("mount: not written yet at a child's close, the content ends in a character cut in two", "path", "/"+rel)
			return 0
		}
		f.m.log().Info("mount: not written yet, the content ends in a character cut in two", "path", "/"+rel, "errno", "EILSEQ")
		return syscall.EILSEQ
	}
	return f.commit(ctx)
}

// scratch tells whether the file is a scratch file, which the mount keeps as it is.
func (f *fileNode) scratch() bool {
	rel, ok := f.rel()
	if !ok {
		return false
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	lf := f.m.local[rel]
	return lf != nil && lf.scratch
}

// unfinishedRune says whether data is UTF-8 but for a last character cut short.
func unfinishedRune(data []byte) bool {
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(data[i]) {
			return !utf8.FullRune(data[i:]) && utf8.Valid(data[:i])
		}
	}
	return false
}

// Fsync writes the buffer, whichever open asks: fsync(2) of any descriptor of a file makes
// its data durable on Linux. A refusal goes to the caller and to the opens that changed the
// buffer.
func (f *fileNode) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	h, _ := fh.(*handle)
	f.mu.Lock()
	defer f.mu.Unlock()
	if h != nil && h.failed != 0 {
		return h.failed
	}
	return f.commit(ctx)
}

func (f *fileNode) Release(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.opens--; f.opens > 0 {
		return 0
	}
	f.m.mu.Lock()
	delete(f.m.open, f)
	f.m.mu.Unlock()
	if e := f.commit(ctx); e != 0 {
		rel, _ := f.rel()
		f.m.log().Warn("mount: not written at the file's last close", "path", "/"+rel, "errno", errnoName(e))
	}
	f.loaded, f.data, f.dirty, f.changed = false, nil, false, nil
	return 0
}

// refused lets go of a refused buffer now, not at Release: the kernel sends that only after
// the last descriptor is closed, and reads until then would see the refused content. Reads
// load the store's again, and a new file that was never written is gone, as its content is.
// The opens that changed the buffer get e from now on; other opens write afresh. f.mu is
// held.
func (f *fileNode) refused(e syscall.Errno) {
	for h := range f.changed {
		h.failed = e
	}
	f.loaded, f.data, f.dirty, f.changed = false, nil, false, nil
	// The kernel may keep pages of the refused content that a write filled whole, and
	// the size: both go. Not here: the kernel may hold those pages locked until this
	// call (a write) returns.
	go f.NotifyContent(0, 0)
	rel, ok := f.rel()
	if !ok {
		return
	}
	f.m.mu.Lock()
	if lf := f.m.local[rel]; lf != nil && !lf.scratch {
		delete(f.m.local, rel)
	}
	f.m.mu.Unlock()
}

// written notes that the buffer is as stored: the opens' changes are written. f.mu is held.
func (f *fileNode) written() {
	f.dirty, f.changed = false, nil
}

// commit writes the buffer if it changed: to the store as one version, or, for a scratch
// file, here. A refusal lets go of it (refused). f.mu is held.
func (f *fileNode) commit(ctx context.Context) syscall.Errno {
	if !f.dirty {
		return 0
	}
	rel, ok := f.rel()
	if !ok { // deleted while open: its writes go nowhere, as on any file system
		f.written()
		return 0
	}
	m := f.m
	m.mu.Lock()
	if lf := m.local[rel]; lf != nil && lf.scratch {
		lf.data, lf.mtime = append([]byte(nil), f.data...), f.mtime
		m.mu.Unlock()
		f.written()
		return 0
	}
	m.mu.Unlock()
	if !utf8.Valid(f.data) {
		m.log().Warn("mount: refused, not UTF-8 text", "path", "/"+rel, "errno", "EILSEQ")
		f.refused(syscall.EILSEQ)
		return syscall.EILSEQ
	}
	content := string(f.data)
	res, err := m.opts.Store.Write(ctx, gitstore.WriteInput{Path: "/" + rel, Content: content, Actor: m.opts.Actor})
	if err != nil {
		e := m.refuse("write", rel, err)
		f.refused(e)
		return e
	}
	f.written()
	if !res.Memory.UpdatedAt.IsZero() {
		f.mtime = res.Memory.UpdatedAt // what stat shows once the file is closed
	}
	m.mu.Lock()
	delete(m.local, rel)
	delete(m.away, rel)
	m.mu.Unlock()
	if res.Memory.Content != nil {
		content = *res.Memory.Content // as stored (a redact policy may have changed it)
	}
	m.wrote(rel, res.Memory, content)
	return 0
}
