package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
func (a *app) importDir(cmd *cobra.Command, dir, ref string, overwrite, create bool) error {
	ctx := cmd.Context()
	root, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(root); err != nil {
		return err
	} else if !fi.IsDir() {
		return fmt.Errorf("%s is not a folder", dir)
	}
	return a.withData(ctx, func(d *gitstore.DataDir) error {
		s, err := findStore(ctx, d, ref)
		if err != nil && !(create && !strings.HasPrefix(ref, gitstore.StorePrefix) && strings.HasPrefix(err.Error(), "no store with")) {
			return err
		}
		existing := map[string]string{} // memory path -> sha256
		var paths []string              // existing memory paths, sorted
		if s != nil {
			info, err := s.Info(ctx)
			if err != nil {
				return err
			}
			if info.ArchivedAt != nil {
				return fmt.Errorf("store %s (%s) is archived and read-only", info.ID, info.Name)
			}
			mems, err := allMemories(ctx, s, gitstore.ListOptions{})
			if err != nil {
				return err
			}
			for _, it := range mems {
				if it.Memory != nil {
					existing[it.Memory.Path] = it.Memory.ContentSHA256
					paths = append(paths, it.Memory.Path)
				}
			}
			sort.Strings(paths)
		}

		var files []dirFile
		var problems, notes []string
		unchanged := 0
		err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", p, err))
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			if rel == "." {
				return nil
			}
			if e.IsDir() {
				if rel == ".git" {
					notes = append(notes, "skipped "+filepath.Join(dir, ".git")+" (the folder's own git repository)")
					return filepath.SkipDir
				}
				return nil
			}
			mpath := "/" + filepath.ToSlash(rel)
			if !e.Type().IsRegular() {
				what := "not a regular file"
				if e.Type()&fs.ModeSymlink != 0 {
					what = "a symbolic link: memories are plain files (copy the file it points to, or remove the link)"
				}
				problems = append(problems, mpath+": "+what)
				return nil
			}
			if err := gitstore.ValidateNewPath(mpath); err != nil {
				problems = append(problems, ruleOf(err))
				return nil
			}
			fi, err := e.Info()
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", mpath, err))
				return nil
			}
			if fi.Size() > gitstore.MaxContentBytes {
				problems = append(problems, fmt.Sprintf("%s: content is %d bytes; the limit is %d bytes", mpath, fi.Size(), gitstore.MaxContentBytes))
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", mpath, err))
				return nil
			}
			if err := gitstore.ValidateContent(string(b)); err != nil {
				problems = append(problems, mpath+": "+ruleOf(err))
				return nil
			}
			f := dirFile{file: p, path: mpath, sha: sha256Hex(b)}
			if old, ok := existing[mpath]; ok {
				switch {
				case old == f.sha:
					unchanged++
					return nil
				case !overwrite:
					problems = append(problems, mpath+": a memory with other content is at this path (--overwrite replaces it with a new version)")
					return nil
				}
				f.existing = old
			} else if other := pathTaken(paths, mpath); other != "" {
				problems = append(problems, fmt.Sprintf("%s: the memory %s is in the way (a memory cannot also be a folder)", mpath, other))
				return nil
			}
			files = append(files, f)
			return nil
		})
		if err != nil {
			return err
		}
		errw := cmd.ErrOrStderr()
		for _, n := range notes {
			fmt.Fprintln(errw, n)
		}
		if len(problems) > 0 {
			lines := problems
			if len(lines) > maxProblems {
				lines = append(lines[:maxProblems:maxProblems], fmt.Sprintf("... and %d more", len(problems)-maxProblems))
			}
			return fmt.Errorf("refused to import %s; nothing was written:\n  %s", dir, strings.Join(lines, "\n  "))
		}
		if s == nil {
			if s, err = d.CreateStore(ctx, gitstore.CreateStoreInput{Name: ref, Actor: cliActor()}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created store %s (%s)\n", s.ID(), ref)
		}
		created, updated, err := writeFiles(cmd, s, files)
		info, ierr := s.Info(ctx)
		if ierr != nil {
			return ierr
		}
		summary := fmt.Sprintf("%d created, %d unchanged, %d updated", created, unchanged, updated)
		if err != nil {
			return fmt.Errorf("import of %s into %s stopped (%s; %d not written): %w", dir, info.ID, summary, len(files)-created-updated, err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "imported %s into store %s (%s): %s\n", dir, info.ID, info.Name, summary)
		return nil
	})
}

// writeFiles writes the files with a few concurrent writers and returns how many memories it
// created and updated.
func writeFiles(cmd *cobra.Command, s *gitstore.Store, files []dirFile) (created, updated int, err error) {
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

func writeFile(ctx context.Context, s *gitstore.Store, actor gitstore.Actor, f dirFile) (gitstore.WriteResult, error) {
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
