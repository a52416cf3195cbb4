package fsmount

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/gitmem/gitmem/gitstore"
)

// dirNode is a folder of the store (the root included).
type dirNode struct {
	fs.Inode
	m *mountFS
}

var (
	_ fs.NodeLookuper  = (*dirNode)(nil)
	_ fs.NodeReaddirer = (*dirNode)(nil)
	_ fs.NodeGetattrer = (*dirNode)(nil)
	_ fs.NodeMkdirer   = (*dirNode)(nil)
	_ fs.NodeCreater   = (*dirNode)(nil)
	_ fs.NodeUnlinker  = (*dirNode)(nil)
	_ fs.NodeRmdirer   = (*dirNode)(nil)
	_ fs.NodeRenamer   = (*dirNode)(nil)
	_ fs.NodeStatfser  = (*dirNode)(nil)
)

// relOf is an inode's path relative to the mount's root; false for an inode that is no
// longer in the tree (its file was deleted or replaced while open).
func relOf(n *fs.Inode) (string, bool) {
	var parts []string
	for !n.IsRoot() {
		name, parent := n.Parent()
		if parent == nil {
			return "", false
		}
		parts = append(parts, name)
		n = parent
	}
	rel := ""
	for i := len(parts) - 1; i >= 0; i-- {
		rel = join(rel, parts[i])
	}
	return rel, true
}

func (d *dirNode) rel() string {
	rel, _ := relOf(d.EmbeddedInode())
	return rel
}

func (m *mountFS) dirAttr(out *fuse.Attr) {
	out.Mode = syscall.S_IFDIR | 0o755
	if m.opts.ReadOnly {
		out.Mode = syscall.S_IFDIR | 0o555
	}
	out.Nlink = 2
	out.SetTimes(nil, &m.started, &m.started)
}

func (m *mountFS) fileAttr(out *fuse.Attr, size int, mtime time.Time) {
	out.Mode = syscall.S_IFREG | 0o644
	if m.opts.ReadOnly {
		out.Mode = syscall.S_IFREG | 0o444
	}
	out.Nlink = 1
	out.Size = uint64(size)
	out.Blocks = (uint64(size) + 511) / 512
	out.SetTimes(nil, &mtime, &mtime)
}

func (d *dirNode) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.m.dirAttr(&out.Attr)
	return 0
}

func (d *dirNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	out.Bsize, out.Frsize, out.NameLen = 4096, 4096, 255
	out.Blocks, out.Bfree, out.Bavail = 1<<20, 1<<20, 1<<20
	return 0
}

func (d *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	rel := join(d.rel(), name)
	k, mem, lf, err := d.m.what(ctx, rel)
	if err != nil {
		return nil, d.m.refuse("lookup", rel, err)
	}
	switch k {
	case folder:
		d.m.dirAttr(&out.Attr)
		return d.child(ctx, name, syscall.S_IFDIR), 0
	case file:
		ch := d.child(ctx, name, syscall.S_IFREG)
		ch.Operations().(*fileNode).attr(ctx, &out.Attr, mem, lf)
		return ch, 0
	}
	return nil, syscall.ENOENT
}

// child is the inode of name in d: the one the tree holds if it has the mode, else a new one.
func (d *dirNode) child(ctx context.Context, name string, mode uint32) *fs.Inode {
	if ch := d.GetChild(name); ch != nil && ch.StableAttr().Mode == mode {
		return ch
	}
	if mode == syscall.S_IFDIR {
		return d.NewInode(ctx, &dirNode{m: d.m}, fs.StableAttr{Mode: mode})
	}
	return d.NewInode(ctx, &fileNode{m: d.m}, fs.StableAttr{Mode: mode})
}

func (d *dirNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	dir := d.rel()
	modes, err := d.names(ctx, dir, shown)
	if err != nil {
		return nil, d.m.refuse("readdir", dir, err)
	}
	list := make([]fuse.DirEntry, 0, len(modes)+2)
	list = append(list, fuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR}, fuse.DirEntry{Name: "..", Mode: syscall.S_IFDIR})
	for name, mode := range modes {
		list = append(list, fuse.DirEntry{Name: name, Mode: mode})
	}
	return fs.NewListDirStream(list), 0
}

// The two views of a folder's names (names).
const (
	// shown is what a listing shows: the store's names but those moved away to scratch
	// names here, and every file held here.
	shown = iota
	// stored is what the store will hold: the store's names, those moved away included
	// (they stay until a new file takes their name), and the new files held here but not
	// scratch ones.
	stored
)

// names is what the folder dir holds in view (shown or stored), with each name's mode.
func (d *dirNode) names(ctx context.Context, dir string, view int) (map[string]uint32, error) {
	entries, err := d.m.listingOf(ctx, dir)
	if err != nil {
		return nil, err
	}
	modes := map[string]uint32{}
	for name, e := range entries {
		modes[name] = syscall.S_IFREG
		if e.dir {
			modes[name] = syscall.S_IFDIR
		}
	}
	d.m.mu.Lock()
	defer d.m.mu.Unlock()
	for p := range d.m.away {
		if parentOf(p) == dir && view == shown {
			delete(modes, baseOf(p))
		}
	}
	for p, lf := range d.m.local {
		if parentOf(p) == dir && (view == shown || !lf.scratch) {
			modes[baseOf(p)] = syscall.S_IFREG
		}
	}
	for p := range d.m.dirs {
		if parentOf(p) == dir && p != "" {
			modes[baseOf(p)] = syscall.S_IFDIR
		}
	}
	return modes, nil
}

// baseOf is the last name of a relative path.
func baseOf(rel string) string { return rel[strings.LastIndexByte(rel, '/')+1:] }

// maxHeld bounds the files and folders that the mount holds in memory (scratch files, new
// files until their close, folders that git cannot hold): each file is at most
// MaxContentBytes, so a program cannot make the mount grow without bound.
const maxHeld = 4096

// maxFolders bounds the folders that the mount holds (made by mkdir, or emptied here):
// each is a name, not content.
const maxFolders = 65536

// roomToHold refuses a new file held here past maxHeld.
func (d *dirNode) roomToHold(op, rel string) syscall.Errno {
	d.m.mu.Lock()
	n := len(d.m.local)
	d.m.mu.Unlock()
	if n >= maxHeld {
		d.m.log().Warn("mount: refused, too many files held in the mount", "op", op, "path", "/"+rel, "errno", "ENOSPC", "limit", maxHeld)
		return syscall.ENOSPC
	}
	return 0
}

// writable refuses a change of a read-only mount.
func (d *dirNode) writable(op, rel string) syscall.Errno {
	if d.m.opts.ReadOnly {
		d.m.log().Info("mount: refused, the mount is read-only", "op", op, "path", "/"+rel)
		return syscall.EROFS
	}
	return 0
}

// validName refuses a name that the store cannot hold (scratch names are held here), and a
// new name that would break clones (a Windows device name, a case twin of a name beside
// it): at the create, as for any name refused, not at the close as the store would.
// leaving is a name of the folder that goes as rel comes (a rename within it), or "".
func (d *dirNode) validName(ctx context.Context, op, rel, leaving string) syscall.Errno {
	name := baseOf(rel)
	if IsScratch(name) {
		return 0
	}
	err := gitstore.ValidatePath("/" + rel)
	if err == nil {
		err = d.newNameBreaksClones(ctx, rel, name, leaving)
	}
	if err != nil {
		d.m.log().Warn("mount: refused, a name the store cannot hold", "op", op, "path", "/"+rel, "errno", "EPERM", "err", err)
		return syscall.EPERM
	}
	return 0
}

// newNameBreaksClones applies the store's rules of new names to name, if the folder does
// not hold it yet (names already in a tree stay usable).
func (d *dirNode) newNameBreaksClones(ctx context.Context, rel, name, leaving string) error {
	dir := d.rel()
	entries, err := d.names(ctx, dir, stored) // with new files not written yet: twins too
	if err != nil {
		return nil // the store decides at the write
	}
	if _, ok := entries[name]; ok {
		return nil
	}
	if err := gitstore.ValidateNewSegment("/"+rel, name, dir == ""); err != nil {
		return err
	}
	for other := range entries {
		if other != leaving && strings.EqualFold(other, name) {
			return fmt.Errorf("%q differs from %q beside it only in case, which clones on macOS and Windows cannot hold", name, other)
		}
	}
	return nil
}

func (d *dirNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	rel := join(d.rel(), name)
	if e := d.writable("mkdir", rel); e != 0 {
		return nil, e
	}
	if e := d.validName(ctx, "mkdir", rel, ""); e != 0 {
		return nil, e
	}
	k, _, _, err := d.m.what(ctx, rel)
	if err != nil {
		return nil, d.m.refuse("mkdir", rel, err)
	}
	if k != none {
		return nil, syscall.EEXIST
	}
	d.m.mu.Lock()
	folders := len(d.m.dirs)
	d.m.mu.Unlock()
	if folders >= maxFolders {
		d.m.log().Warn("mount: refused, too many empty folders held in the mount", "op", "mkdir", "path", "/"+rel, "errno", "ENOSPC", "limit", maxFolders)
		return nil, syscall.ENOSPC
	}
	d.m.keepFolder(rel)
	d.m.dirAttr(&out.Attr)
	return d.child(ctx, name, syscall.S_IFDIR), 0
}

func (d *dirNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	rel := join(d.rel(), name)
	if e := d.writable("create", rel); e != 0 {
		return nil, nil, 0, e
	}
	if e := d.validName(ctx, "create", rel, ""); e != 0 {
		return nil, nil, 0, e
	}
	k, _, _, err := d.m.what(ctx, rel)
	if err != nil {
		return nil, nil, 0, d.m.refuse("create", rel, err)
	}
	if k == folder {
		return nil, nil, 0, syscall.EISDIR
	}
	if k == none && !IsScratch(name) {
		// The listing may be older than another writer's new memory: ask the store, so
		// that a create does not write over it.
		if _, err := d.m.opts.Reader.GetByPath(ctx, "/"+rel, false); err == nil {
			k = file
			d.m.changed()
		} else if !gitstore.IsKind(err, gitstore.KindNotFound) {
			return nil, nil, 0, d.m.refuse("create", rel, err)
		}
	}
	if k == file && flags&syscall.O_EXCL != 0 {
		return nil, nil, 0, syscall.EEXIST
	}
	scratch := IsScratch(name)
	now := time.Now()
	if e := d.roomToHold("create", rel); k == none && e != 0 {
		return nil, nil, 0, e
	}
	if k == none {
		d.m.mu.Lock()
		d.m.local[rel] = &localFile{mtime: now, scratch: scratch}
		d.m.mu.Unlock()
	}
	ch := d.child(ctx, name, syscall.S_IFREG)
	f := ch.Operations().(*fileNode)
	h := newHandle(ctx, true, flags)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case k == none:
		// A new file is written when it is closed, even empty.
		f.data, f.loaded, f.dirty, f.mtime = nil, true, !scratch, now
		f.changedBy(h, false)
	case flags&syscall.O_TRUNC != 0:
		f.data, f.loaded, f.dirty, f.mtime = nil, true, true, now
		f.changedBy(h, false)
	default:
		// The name exists (another writer made it since the kernel last looked): O_CREAT
		// without O_EXCL or O_TRUNC opens it as it is.
		if f.opens == 0 || !f.loaded {
			// Read by path: a new inode is not in the tree until Create returns.
			data, mtime, err := d.m.content(ctx, rel)
			if err != nil {
				return nil, nil, 0, d.m.refuse("create", rel, err)
			}
			f.data, f.loaded, f.mtime = data, true, mtime
		}
	}
	f.opened()
	d.m.fileAttr(&out.Attr, len(f.data), f.mtime)
	return ch, h, 0, 0
}

func (d *dirNode) Unlink(ctx context.Context, name string) syscall.Errno {
	dir := d.rel()
	rel := join(dir, name)
	if e := d.writable("unlink", rel); e != 0 {
		return e
	}
	k, mem, lf, err := d.m.what(ctx, rel)
	switch {
	case err != nil:
		return d.m.refuse("unlink", rel, err)
	case k == folder:
		return syscall.EISDIR
	case k == none:
		return syscall.ENOENT
	case lf != nil:
		d.m.mu.Lock()
		delete(d.m.local, rel)
		var gone string // a memory moved to this scratch name: deleting the name deletes it
		for p, to := range d.m.away {
			if to == rel {
				gone = p
				delete(d.m.away, p)
			}
		}
		d.m.mu.Unlock()
		if gone != "" {
			if _, err := d.m.opts.Store.Delete(ctx, gitstore.DeleteInput{Path: "/" + gone, Actor: d.m.opts.Actor}); err != nil && !gitstore.IsKind(err, gitstore.KindNotFound) {
				return d.m.refuse("unlink", gone, err)
			}
			d.m.changed()
		}
		return 0
	}
	if _, err := d.m.opts.Store.Delete(ctx, gitstore.DeleteInput{Path: "/" + rel, ID: mem.ID, Actor: d.m.opts.Actor}); err != nil {
		return d.m.refuse("unlink", rel, err)
	}
	d.m.keepFolder(dir)
	d.m.removed(rel)
	return 0
}

func (d *dirNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	rel := join(d.rel(), name)
	if e := d.writable("rmdir", rel); e != 0 {
		return e
	}
	k, _, _, err := d.m.what(ctx, rel)
	switch {
	case err != nil:
		return d.m.refuse("rmdir", rel, err)
	case k == none:
		return syscall.ENOENT
	case k == file:
		return syscall.ENOTDIR
	}
	empty, err := d.m.isEmpty(ctx, rel)
	if err != nil {
		return d.m.refuse("rmdir", rel, err)
	}
	if !empty {
		return syscall.ENOTEMPTY
	}
	d.m.mu.Lock()
	delete(d.m.dirs, rel)
	d.m.mu.Unlock()
	d.m.removed(rel) // the folder in its parent's listing, from before its memories went
	d.m.keepFolder(parentOf(rel))
	return 0
}

// renameExchange is RENAME_EXCHANGE (renameat2), which a store cannot do in one step.
const renameExchange = 0x2

// renameNoReplace is RENAME_NOREPLACE (renameat2).
const renameNoReplace = 0x1

func (d *dirNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	from := join(d.rel(), name)
	toDir, ok := newParent.(*dirNode)
	if !ok {
		return syscall.EXDEV
	}
	to := join(toDir.rel(), newName)
	if e := d.writable("rename", from); e != 0 {
		return e
	}
	if flags&renameExchange != 0 {
		return syscall.ENOTSUP
	}
	leaving := ""
	if toDir.rel() == d.rel() {
		leaving = name // a rename that changes only the case of a name
	}
	if e := toDir.validName(ctx, "rename", to, leaving); e != 0 {
		return e
	}
	if from == to {
		return 0
	}
	src, srcMem, srcLocal, err := d.m.what(ctx, from)
	if err != nil {
		return d.m.refuse("rename", from, err)
	}
	dst, dstMem, _, err := d.m.what(ctx, to)
	if err != nil {
		return d.m.refuse("rename", to, err)
	}
	switch {
	case src == none:
		return syscall.ENOENT
	case dst != none && flags&renameNoReplace != 0:
		return syscall.EEXIST
	case src == folder && dst == file:
		return syscall.ENOTDIR
	case src == file && dst == folder:
		return syscall.EISDIR
	}
	if src == folder {
		return d.renameFolder(ctx, from, to, dst)
	}
	return d.renameFile(ctx, name, from, to, srcMem, srcLocal, dstMem)
}

func (d *dirNode) renameFolder(ctx context.Context, from, to string, dst kind) syscall.Errno {
	if len(to) > len(from) && to[:len(from)+1] == from+"/" {
		return syscall.EINVAL // into itself
	}
	if dst == folder {
		empty, err := d.m.isEmpty(ctx, to)
		if err != nil {
			return d.m.refuse("rename", to, err)
		}
		if !empty {
			return syscall.ENOTEMPTY
		}
		d.m.mu.Lock()
		delete(d.m.dirs, to)
		d.m.mu.Unlock()
	}
	entries, err := d.m.listingOf(ctx, from)
	if err != nil {
		return d.m.refuse("rename", from, err)
	}
	if len(entries) > 0 {
		if _, err := d.m.opts.Store.MovePath(ctx, gitstore.MovePathInput{From: "/" + from, To: "/" + to, Actor: d.m.opts.Actor}); err != nil {
			return d.m.refuse("rename", from, err)
		}
	}
	d.m.moveLocal(from, to)
	d.m.keepFolder(parentOf(from))
	d.m.changed()
	return 0
}

func (d *dirNode) renameFile(ctx context.Context, name, from, to string, srcMem *gitstore.Memory, srcLocal *localFile, dstMem *gitstore.Memory) syscall.Errno {
	m := d.m
	toScratch := IsScratch(baseOf(to))
	// The content to move: the open file's, if it is open, else what is stored.
	content, written, err := d.openContent(ctx, name, from)
	if err != nil {
		return m.refuse("rename", from, err)
	}
	switch {
	case toScratch:
		// Out of the store's sight. A memory moved so (vim's backup) stays in the store
		// until the scratch file is deleted, or a new file takes its name and is written.
		m.mu.Lock()
		m.local[to] = &localFile{data: content, mtime: time.Now(), scratch: true}
		delete(m.local, from)
		if srcMem != nil {
			m.away[from] = to
		}
		m.mu.Unlock()
		written() // the scratch file holds it
	case srcLocal != nil || dstMem != nil:
		// A file held here (a temporary file renamed over its target), or a memory moved over
		// another: the target's next version has the content.
		if _, err := m.opts.Store.Write(ctx, gitstore.WriteInput{Path: "/" + to, Content: string(content), Actor: m.opts.Actor}); err != nil {
			return m.refuse("rename", to, err)
		}
		if srcMem != nil {
			_, err := m.opts.Store.Delete(ctx, gitstore.DeleteInput{Path: "/" + from, ID: srcMem.ID, Actor: m.opts.Actor})
			if err != nil && !gitstore.IsKind(err, gitstore.KindNotFound) { // not found: gone anyway
				// The rename failed, so an open file keeps its name: its close stores it
				// there, though its content is under the new name too, as listings show.
				m.changed()
				return m.refuse("rename", from, err)
			}
		}
		written()
		m.mu.Lock()
		delete(m.local, from)
		delete(m.local, to)
		delete(m.away, to)
		m.mu.Unlock()
	default:
		path := "/" + to
		if _, err := m.opts.Store.UpdateMemory(ctx, gitstore.UpdateInput{FromPath: "/" + from, ID: srcMem.ID, Path: &path, Actor: m.opts.Actor}); err != nil {
			return m.refuse("rename", from, err)
		}
		m.mu.Lock()
		delete(m.local, to)
		delete(m.away, to)
		m.mu.Unlock()
	}
	m.keepFolder(parentOf(from))
	m.changed()
	return 0
}

// openContent is the content of file name of d: its open buffer if it is open, else what
// the mount holds. written, called once the content is stored under its new name, marks an
// open buffer as written, if it did not change meanwhile.
func (d *dirNode) openContent(ctx context.Context, name, rel string) (data []byte, written func(), err error) {
	if ch := d.GetChild(name); ch != nil {
		if f, ok := ch.Operations().(*fileNode); ok {
			f.mu.Lock()
			if f.loaded {
				data := append([]byte(nil), f.data...)
				f.mu.Unlock()
				return data, func() {
					f.mu.Lock()
					if string(f.data) == string(data) {
						f.written()
					}
					f.mu.Unlock()
				}, nil
			}
			f.mu.Unlock()
		}
	}
	data, _, err = d.m.content(ctx, rel)
	return data, func() {}, err
}
