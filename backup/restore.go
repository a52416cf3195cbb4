package backup

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gitmem/gitmem/gitserve"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/durable"
	"github.com/gitmem/gitmem/internal/gitexec"
)

// Restore makes the stores and files of the backup dir in the data directory d, which
// holds no store yet: each store's history is fetched from the backup, checked as an import
// is, and its catalog built from it (progress is told the commits read). The search
// indexes are the caller's to build.
func Restore(ctx context.Context, dir string, d *gitstore.DataDir, progress func(id string) gitstore.Progress) (Manifest, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return m, err
	}
	for _, e := range m.Stores {
		st, err := importStore(ctx, d, filepath.Join(dir, "stores", e.ID+".git"), progress(e.ID))
		if err != nil {
			return m, fmt.Errorf("restore store %s: %w", e.ID, err)
		}
		if st.Head() != e.Commit {
			return m, fmt.Errorf("restore store %s: main is at %s, the manifest says %s", e.ID, st.Head(), e.Commit)
		}
	}
	for _, f := range m.Files {
		if f == "gitmem.toml" {
			continue // the config is the operator's to put back where it was
		}
		raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return m, fmt.Errorf("restore %s: %w", f, err)
		}
		p := filepath.Join(d.Dir(), filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return m, err
		}
		if err := durable.WriteFile(p, raw, 0o600); err != nil {
			return m, fmt.Errorf("restore %s: %w", f, err)
		}
	}
	return m, nil
}

// importStore makes a store of d from the main of the bare repository repo.
func importStore(ctx context.Context, d *gitstore.DataDir, repo string, progress gitstore.Progress) (*gitstore.Store, error) {
	tmp, err := d.PrepareImport()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp) // gone already once adopted
	if err := git(ctx, tmp, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", repo, "+refs/heads/main:refs/heads/main"); err != nil {
		return nil, err
	}
	if _, problems, err := gitserve.CheckImport(tmp); err != nil {
		return nil, err
	} else if len(problems) > 0 {
		return nil, fmt.Errorf("its history is refused: %s", strings.Join(problems, "; "))
	}
	return d.ImportStore(ctx, tmp, progress)
}

// Live is a store as the catalog that serves it has it: the data directory's own, or a
// server's through its API.
type Live interface {
	ReaderAt(ctx context.Context, at string) (gitstore.MemoryReader, error)
}

// Report is what a verification found, store by store.
type Report struct {
	Stores   int      `json:"stores"`
	Versions int      `json:"versions"`
	Memories int      `json:"memories"`
	Problems []string `json:"problems"`
}

// OK tells whether nothing was found wrong.
func (r Report) OK() bool { return len(r.Problems) == 0 }

func (r *Report) problem(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// VerifyBackup checks the backup dir: the manifest, git fsck of each store's repository,
// main at the commit the manifest names, every version of its history readable once its
// catalog is rebuilt from it, and the files the manifest lists.
func VerifyBackup(ctx context.Context, dir string) (Report, error) {
	var r Report
	m, err := ReadManifest(dir)
	if err != nil {
		r.problem("%v", err)
		return r, nil
	}
	scratch, err := newScratch(ctx)
	if err != nil {
		return r, err
	}
	defer scratch.close()
	for _, e := range m.Stores {
		r.Stores++
		repo := filepath.Join(dir, "stores", e.ID+".git")
		if err := fsck(ctx, repo); err != nil {
			r.problem("store %s (%s): %v", e.ID, e.Name, err)
			continue
		}
		head, err := gitexec.In(ctx, repo, "rev-parse", "refs/heads/main")
		if err != nil || head != e.Commit {
			r.problem("store %s (%s): main is at %q, the manifest says %s", e.ID, e.Name, head, e.Commit)
			continue
		}
		st, err := importStore(ctx, scratch.d, repo, nil)
		if err != nil {
			r.problem("store %s (%s): its history does not rebuild: %v", e.ID, e.Name, err)
			continue
		}
		readAll(ctx, st, &r, e.ID)
	}
	for _, f := range m.Files {
		raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			r.problem("file %s: %v", f, err)
			continue
		}
		if strings.HasSuffix(f, ".json") && !json.Valid(raw) {
			r.problem("file %s is not valid JSON", f)
		}
	}
	return r, nil
}

// VerifyData checks the data directory root, in use or not: git fsck of each store's
// repository, and its catalog (live gives it) equal, as of the same commit, to one rebuilt
// from its history, every version of which is read.
func VerifyData(ctx context.Context, root string, live func(id string) (Live, error)) (Report, error) {
	var r Report
	src := Dir{Root: root}
	ids, err := src.StoreIDs(ctx)
	if err != nil {
		return r, err
	}
	scratch, err := newScratch(ctx)
	if err != nil {
		return r, err
	}
	defer scratch.close()
	for _, id := range ids {
		r.Stores++
		if err := fsck(ctx, src.layout().StoreRepo(id)); err != nil {
			r.problem("store %s: %v", id, err)
			continue
		}
		// A copy of main as it is now, rebuilt, to compare with the catalog at that commit.
		copyDir := filepath.Join(scratch.dir, "copies", id+".git")
		if err := git(ctx, "", "init", "--quiet", "--bare", copyDir); err != nil {
			return r, err
		}
		if err := src.FetchMain(ctx, copyDir, id); err != nil {
			r.problem("store %s: %v", id, err)
			continue
		}
		st, err := importStore(ctx, scratch.d, copyDir, nil)
		if err != nil {
			r.problem("store %s: its history does not rebuild: %v", id, err)
			continue
		}
		readAll(ctx, st, &r, id)
		l, err := live(id)
		if err != nil {
			r.problem("store %s: open its catalog: %v", id, err)
			continue
		}
		compare(ctx, st, l, &r, id)
	}
	return r, nil
}

// scratch is a temporary data directory where histories are rebuilt.
type scratch struct {
	dir string
	d   *gitstore.DataDir
}

func newScratch(ctx context.Context) (*scratch, error) {
	dir, err := os.MkdirTemp("", "gitmem-verify-")
	if err != nil {
		return nil, err
	}
	d, err := gitstore.Open(ctx, filepath.Join(dir, "data"), gitstore.Options{})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &scratch{dir: dir, d: d}, nil
}

func (s *scratch) close() {
	s.d.Close()
	os.RemoveAll(s.dir)
}

func fsck(ctx context.Context, repo string) error {
	if err := git(ctx, repo, "fsck", "--no-dangling", "--no-progress", "--full"); err != nil {
		return fmt.Errorf("git fsck found damage: %v", err)
	}
	return nil
}

// readAll reads every memory and every version of st with its content.
func readAll(ctx context.Context, st *gitstore.Store, r *Report, id string) {
	for cursor := ""; ; {
		p, err := st.Versions(ctx, gitstore.VersionFilter{Limit: 1000, Cursor: cursor, WithContent: true})
		if err != nil {
			r.problem("store %s: read its versions: %v", id, err)
			return
		}
		r.Versions += len(p.Versions)
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	mems, err := listAll(ctx, st, true)
	if err != nil {
		r.problem("store %s: read its memories: %v", id, err)
		return
	}
	r.Memories += len(mems)
}

// listAll lists every memory of a reader, by id.
func listAll(ctx context.Context, rd gitstore.MemoryReader, withContent bool) (map[string]gitstore.Memory, error) {
	out := map[string]gitstore.Memory{}
	for cursor := ""; ; {
		p, err := rd.List(ctx, gitstore.ListOptions{Limit: 1000, Cursor: cursor, WithContent: withContent})
		if err != nil {
			return nil, err
		}
		for _, it := range p.Items {
			if it.Memory != nil {
				out[it.Memory.ID] = *it.Memory
			}
		}
		if cursor = p.NextCursor; cursor == "" {
			return out, nil
		}
	}
}

// compare checks that the live catalog, as of the rebuilt store's head, has the same
// memories at the same paths with the same content.
func compare(ctx context.Context, rebuilt *gitstore.Store, live Live, r *Report, id string) {
	at, err := live.ReaderAt(ctx, rebuilt.Head())
	if err != nil {
		r.problem("store %s: read its catalog as of %s: %v", id, rebuilt.Head(), err)
		return
	}
	want, err := listAll(ctx, rebuilt, false)
	if err != nil {
		r.problem("store %s: %v", id, err)
		return
	}
	got, err := listAll(ctx, at, false)
	if err != nil {
		r.problem("store %s: read its catalog: %v", id, err)
		return
	}
	var diffs []string
	for mid, w := range want {
		g, ok := got[mid]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s (%s) is missing", mid, w.Path))
		case g.Path != w.Path || g.ContentSHA256 != w.ContentSHA256:
			diffs = append(diffs, fmt.Sprintf("%s is %s %s, history says %s %s", mid, g.Path, short(g.ContentSHA256), w.Path, short(w.ContentSHA256)))
		}
	}
	for mid, g := range got {
		if _, ok := want[mid]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s (%s) is not in the history", mid, g.Path))
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		if len(diffs) > 10 {
			diffs = append(diffs[:10], fmt.Sprintf("and %d more", len(diffs)-10))
		}
		r.problem("store %s: the catalog differs from a rebuild from its history: %s (gitmem reindex %s rebuilds it)", id, strings.Join(diffs, "; "), id)
	}
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// WriteTar writes the backup directory dir as a tar archive to w, the manifest last, so
// that a cut-off archive has none.
func WriteTar(dir string, w io.Writer) error {
	tw := tar.NewWriter(w)
	var files []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() && p != filepath.Join(dir, ManifestFile) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range append(files, filepath.Join(dir, ManifestFile)) {
		if err := addFile(tw, dir, p); err != nil {
			return err
		}
	}
	return tw.Close()
}

func addFile(tw *tar.Writer, dir, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	name, _ := filepath.Rel(dir, p)
	if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(name), Mode: 0o600, Size: st.Size(), ModTime: st.ModTime(), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// ExtractTar unpacks a backup archive into dir: regular files only, each inside dir.
func ExtractTar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("the backup archive is cut off or damaged (%w): not a finished gitmem backup", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("the backup archive names a file outside it: %q", h.Name)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("the backup archive is cut off or damaged (%w): not a finished gitmem backup", err)
		}
	}
}
