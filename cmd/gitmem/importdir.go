package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/gitstore"
)

// dirFile is one file of a folder to import.
type dirFile struct {
	file, path string // on disk; the memory path
	sha        string // sha256 of the content, as checked
	existing   string // sha256 of the memory at path, if there is one
}

// importWriters write files concurrently: the store's writer groups their commits, and each
// file stays its own commit and version.
const importWriters = 8

// maxProblems bounds the problems listed when a folder is refused.
const maxProblems = 20

// importDir writes the regular files below dir into a store, one version per file, after
// checking all of them (see the import command's help).
func (a *app) importDir(cmd *cobra.Command, dir, ref string, overwrite, create, asJSON bool) error {
	ctx := cmd.Context()
	root, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// A --dir that is no folder is a wrong call, as put's FILE that does not exist.
	if fi, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return usageError{fmt.Errorf("--dir %s: no such folder", quoteArg(dir))}
	} else if err != nil {
		return err
	} else if !fi.IsDir() {
		return usageError{fmt.Errorf("--dir %s is a file, not a folder (a bundle is imported without --dir: gitmem import FILE)", quoteArg(dir))}
	}
	return a.withTarget(ctx, func(t target) error {
		s, err := t.find(ctx, ref)
		if err != nil && !(create && !strings.HasPrefix(ref, gitstore.StorePrefix) && errors.Is(err, gitstore.ErrNoStore)) {
			return err
		}
		sc := &dirScan{dir: dir, root: root, overwrite: overwrite, existing: map[string]string{}}
		if s != nil {
			if err := sc.loadStore(ctx, s); err != nil {
				return err
			}
		}
		if err := filepath.WalkDir(root, sc.visit); err != nil {
			return err
		}
		for _, n := range sc.notes {
			fmt.Fprintln(cmd.ErrOrStderr(), n)
		}
		if len(sc.problems) > 0 {
			return sc.refusal()
		}
		if s == nil {
			if s, err = t.createStore(ctx, gitstore.CreateStoreInput{Name: ref, Actor: cliActor()}); err != nil {
				return err
			}
			if !asJSON {
				fmt.Fprintf(cmd.OutOrStdout(), "created store %s (%s)\n", s.ID(), ref)
			}
		}
		return importFiles(cmd, s, sc, asJSON)
	})
}

// dirScan is what a walk of a folder to import finds: the files to write, and the problems
// that refuse the whole folder.
type dirScan struct {
	dir, root string            // the folder as given, and absolute
	overwrite bool              // a file may replace a memory with other content
	existing  map[string]string // the store's memories: path -> sha256
	paths     []string          // the store's memory paths, sorted

	files     []dirFile
	problems  []importProblem
	notes     []string
	unchanged int // files that the store has already, with the same content
}

// loadStore reads the memories of the store that the folder goes into. An archived store
// takes no import.
func (sc *dirScan) loadStore(ctx context.Context, s storeAPI) error {
	info, err := s.Info(ctx)
	if err != nil {
		return err
	}
	if info.ArchivedAt != nil {
		return &gitstore.Error{Kind: gitstore.KindArchived, Message: fmt.Sprintf("store %s (%s) is archived and read-only", info.ID, info.Name)}
	}
	mems, err := allMemories(ctx, s, gitstore.ListOptions{})
	if err != nil {
		return err
	}
	for _, it := range mems {
		if it.Memory != nil {
			sc.existing[it.Memory.Path] = it.Memory.ContentSHA256
			sc.paths = append(sc.paths, it.Memory.Path)
		}
	}
	sort.Strings(sc.paths)
	return nil
}

// visit is the WalkDir function: it checks each file, and skips the folder's own .git.
func (sc *dirScan) visit(p string, e fs.DirEntry, err error) error {
	if err != nil {
		sc.problems = append(sc.problems, importProblem{"", fmt.Sprintf("%s: %v", p, err)})
		return nil
	}
	rel, _ := filepath.Rel(sc.root, p)
	if rel == "." {
		return nil
	}
	if e.IsDir() {
		if rel == ".git" {
			sc.notes = append(sc.notes, "skipped "+filepath.Join(sc.dir, ".git")+" (the folder's own git repository)")
			return filepath.SkipDir
		}
		if rel == ".gitmem" { // in a clone of a store: its metadata, never a memory
			sc.notes = append(sc.notes, "skipped "+filepath.Join(sc.dir, ".gitmem")+" (a store's own metadata, never a memory)")
			return filepath.SkipDir
		}
		return nil
	}
	mpath := "/" + filepath.ToSlash(rel)
	b, problem := readMemoryFile(p, mpath, e)
	if problem.text != "" {
		sc.problems = append(sc.problems, problem)
		return nil
	}
	sc.add(dirFile{file: p, path: mpath, sha: sha256Hex(b)})
	return nil
}

// readMemoryFile reads the file p as the memory mpath, or says which rule it breaks, or
// what kept it from being read.
func readMemoryFile(p, mpath string, e fs.DirEntry) ([]byte, importProblem) {
	if !e.Type().IsRegular() {
		what := "not a regular file"
		if e.Type()&fs.ModeSymlink != 0 {
			what = "a symbolic link: memories are plain files (copy the file it points to, or remove the link)"
		}
		return nil, importProblem{gitstore.KindInvalid, mpath + ": " + what}
	}
	if err := gitstore.ValidateNewPath(mpath); err != nil {
		return nil, importProblem{gitstore.KindInvalid, ruleOf(err)}
	}
	fi, err := e.Info()
	if err != nil {
		return nil, importProblem{"", fmt.Sprintf("%s: %v", mpath, err)}
	}
	if fi.Size() > gitstore.MaxContentBytes {
		return nil, importProblem{gitstore.KindInvalid, fmt.Sprintf("%s: content is %d bytes; the limit is %d bytes", mpath, fi.Size(), gitstore.MaxContentBytes)}
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, importProblem{"", fmt.Sprintf("%s: %v", mpath, err)}
	}
	if err := gitstore.ValidateContent(string(b)); err != nil {
		return nil, importProblem{gitstore.KindInvalid, mpath + ": " + ruleOf(err)}
	}
	return b, importProblem{}
}

// add takes a file to write, unless the store has it already or a memory is in its way.
func (sc *dirScan) add(f dirFile) {
	if old, ok := sc.existing[f.path]; ok {
		switch {
		case old == f.sha:
			sc.unchanged++
			return
		case !sc.overwrite:
			sc.problems = append(sc.problems, importProblem{gitstore.KindPathConflict, f.path + ": a memory with other content is at this path (--overwrite replaces it with a new version)"})
			return
		}
		f.existing = old
	} else if other := pathTaken(sc.paths, f.path); other != "" {
		sc.problems = append(sc.problems, importProblem{gitstore.KindPathConflict, fmt.Sprintf("%s: the memory %s is in the way (a memory cannot also be a folder)", f.path, other)})
		return
	}
	sc.files = append(sc.files, f)
}

// importProblem is one reason a folder is refused: a file that breaks a rule
// (KindInvalid), a path taken in the store (KindPathConflict), or one that could not be
// read (no kind).
type importProblem struct {
	kind gitstore.Kind
	text string
}

// refusal is the error of a folder with problems: up to maxProblems of them, then how many
// more. Its kind, and so the exit code, is the first of the problems' kinds in this order:
// a rule broken (exit 2), which no store or flag lets in; then a path taken (exit 4), which
// --overwrite or another store would; else none (exit 1), a file that could not be read.
func (sc *dirScan) refusal() error {
	var lines []string
	for _, p := range sc.problems[:min(len(sc.problems), maxProblems)] {
		lines = append(lines, p.text)
	}
	if len(sc.problems) > maxProblems {
		lines = append(lines, fmt.Sprintf("... and %d more", len(sc.problems)-maxProblems))
	}
	msg := fmt.Sprintf("refused to import %s; nothing was written:\n  %s", sc.dir, strings.Join(lines, "\n  "))
	for _, k := range []gitstore.Kind{gitstore.KindInvalid, gitstore.KindPathConflict} {
		if slices.ContainsFunc(sc.problems, func(p importProblem) bool { return p.kind == k }) {
			return &gitstore.Error{Kind: k, Message: msg}
		}
	}
	return errors.New(msg)
}

// importFiles writes the files that a scan found into s and says what it did.
func importFiles(cmd *cobra.Command, s storeAPI, sc *dirScan, asJSON bool) error {
	created, updated, err := writeFiles(cmd, s, sc.files)
	info, ierr := s.Info(cmd.Context())
	if ierr != nil {
		return ierr
	}
	summary := fmt.Sprintf("%d created, %d unchanged, %d updated", created, sc.unchanged, updated)
	if err != nil {
		return fmt.Errorf("import of %s into %s stopped (%s; %d not written): %w", sc.dir, info.ID, summary, len(sc.files)-created-updated, err)
	}
	if asJSON {
		out := storeJSON(info)
		out["imported"] = map[string]any{"source": sc.dir, "created": created, "unchanged": sc.unchanged, "updated": updated}
		return printJSON(cmd.OutOrStdout(), out)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "imported %s into store %s (%s): %s\n", sc.dir, info.ID, info.Name, summary)
	return nil
}

// writeFiles writes the files with a few concurrent writers and returns how many memories it
// created and updated.
func writeFiles(cmd *cobra.Command, s storeAPI, files []dirFile) (created, updated int, err error) {
	ctx := cmd.Context()
	actor := cliActor()
	progress, done := progressBar(cmd.ErrOrStderr(), "importing files", "files")
	defer done()
	var mu sync.Mutex // guards the counts, err and progress
	work := make(chan dirFile)
	var wg sync.WaitGroup
	for range importWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				res, werr := writeFile(ctx, s, actor, f)
				mu.Lock()
				switch {
				case werr != nil:
					if err == nil {
						err = werr
					}
				case res.Version != nil && res.Version.Operation == gitstore.OpCreated:
					created++
				case res.Version != nil:
					updated++
				}
				progress(created+updated, len(files))
				mu.Unlock()
			}
		}()
	}
	for _, f := range files {
		mu.Lock()
		stop := err != nil
		mu.Unlock()
		if stop {
			break
		}
		work <- f
	}
	close(work)
	wg.Wait()
	return created, updated, err
}

func writeFile(ctx context.Context, s storeAPI, actor gitstore.Actor, f dirFile) (gitstore.WriteResult, error) {
	b, err := os.ReadFile(f.file)
	if err != nil {
		return gitstore.WriteResult{}, err
	}
	if sha256Hex(b) != f.sha {
		return gitstore.WriteResult{}, fmt.Errorf("%s changed while it was imported", f.file)
	}
	in := gitstore.WriteInput{Path: f.path, Content: string(b), Actor: actor,
		Precondition: &gitstore.Precondition{Type: gitstore.NotExists}}
	if f.existing != "" {
		in.Precondition = &gitstore.Precondition{Type: gitstore.ContentSHA256, ContentSHA256: f.existing}
	}
	res, err := s.Write(ctx, in)
	if err != nil {
		return res, fmt.Errorf("%s: %w", f.path, err)
	}
	return res, nil
}

// pathTaken returns an existing memory path that is an ancestor of p or lies below p as a
// folder, or "".
func pathTaken(sorted []string, p string) string {
	for i := 1; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		if j := sort.SearchStrings(sorted, p[:i]); j < len(sorted) && sorted[j] == p[:i] {
			return p[:i]
		}
	}
	if j := sort.SearchStrings(sorted, p+"/"); j < len(sorted) && strings.HasPrefix(sorted[j], p+"/") {
		return sorted[j]
	}
	return ""
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ruleOf is the message of a gitstore error.
func ruleOf(err error) string {
	if e, ok := err.(*gitstore.Error); ok {
		return e.Message
	}
	return err.Error()
}
