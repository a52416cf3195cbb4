package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/client"
	"github.com/gitmem/gitmem/gitserve"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/gitexec"
)

func init() {
	register(newExportCmd)
	register(newImportCmd)
}

// runGit runs git on the bare repository dir (GIT_DIR) from the current directory, so that
// relative paths in args are the user's. Its stderr goes to stderr and, for the error, to a
// buffer.
func runGit(dir string, stdout, stderr io.Writer, args ...string) error {
	cmd := gitexec.Command(context.Background(), args...)
	cmd.Env = []string{"GIT_DIR=" + dir}
	cmd.Stdin = os.Stdin // a credential prompt, for a fetch over http(s) or ssh
	var errBuf bytes.Buffer
	cmd.Stdout = stdout
	cmd.Stderr = io.MultiWriter(stderr, &errBuf)
	if err := cmd.Run(); err != nil {
		sub := gitexec.Subcommand(args)
		msg := strings.TrimSpace(errBuf.String())
		if msg == "" {
			msg = err.Error()
		}
		if stderr != io.Discard { // git's own messages are on the terminal already: once is enough
			return fmt.Errorf("git %s failed (%v; its messages are above)", sub, err)
		}
		return fmt.Errorf("git %s: %s", sub, msg)
	}
	return nil
}

func gitOutput(dir string, args ...string) (string, error) {
	var out bytes.Buffer
	err := runGit(dir, &out, io.Discard, args...)
	return strings.TrimSpace(out.String()), err
}

func newExportCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "export STORE FILE|-",
		Short: "Write a store's whole history to a git bundle",
		Long: `Writes the store's repository (main, with its full history) to FILE as a git bundle, or to
standard output for "-". "gitmem import FILE" makes the same store from it elsewhere, with the
same ids and versions; "git clone FILE" makes a working copy of it for a person.

Needs the git program.`,
		Example: `  gitmem export prefs prefs.bundle
  gitmem export prefs - | ssh backup 'cat > prefs.bundle'
  git clone prefs.bundle prefs`,
		Args: exactArgs("STORE", "FILE|-"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := gitexec.Need("export"); err != nil {
				return err
			}
			return a.withStoreAPI(cmd.Context(), args[0], func(s storeAPI) error {
				info, err := s.Info(cmd.Context())
				if err != nil {
					return err
				}
				repo, done, err := bundleSource(cmd.Context(), s)
				if err != nil {
					return err
				}
				defer done()
				count, err := gitOutput(repo, "rev-list", "--count", "refs/heads/main")
				if err != nil {
					return err
				}
				head, err := gitOutput(repo, "rev-parse", "refs/heads/main")
				if err != nil {
					return err
				}
				file, out, report := args[1], io.Writer(io.Discard), cmd.OutOrStdout()
				if file == "-" {
					out, report = cmd.OutOrStdout(), cmd.ErrOrStderr()
				}
				// HEAD too, so that git clone of the bundle checks main out.
				if err := runGit(repo, out, cmd.ErrOrStderr(), "bundle", "create", "--quiet", file, "HEAD", "refs/heads/main"); err != nil {
					return err
				}
				size, bytes := "", int64(-1)
				if fi, err := os.Stat(file); err == nil && file != "-" {
					size, bytes = fmt.Sprintf(", %d bytes", fi.Size()), fi.Size()
				}
				if asJSON { // on standard error when the bundle goes to standard output
					n, _ := strconv.Atoi(count)
					out := map[string]any{"type": "export", "memory_store_id": info.ID, "name": info.Name, "file": file,
						"commits": n, "head": head, "size_bytes": nil}
					if bytes >= 0 {
						out["size_bytes"] = bytes
					}
					return printJSON(report, out)
				}
				where := file
				if file == "-" {
					where = "standard output"
				}
				fmt.Fprintf(report, "exported store %s (%s) to %s: %s commits, head %s%s\n",
					info.ID, info.Name, where, count, shortHash(head), size)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was exported as JSON (on standard error with FILE -)")
	return cmd
}

// bundleSource is the repository that export bundles: the store's own, or, through a
// server, a temporary one that main is fetched into from the server's git route (removed
// by done).
func bundleSource(ctx context.Context, s storeAPI) (repo string, done func(), err error) {
	rs, ok := s.(*client.Store)
	if !ok {
		return s.(*gitstore.Store).RepoPath(), func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "gitmem-export-*.git")
	if err != nil {
		return "", nil, err
	}
	done = func() { os.RemoveAll(tmp) }
	err = runGit(tmp, io.Discard, io.Discard, "init", "--quiet", "--bare", "--initial-branch=main")
	if err == nil {
		err = rs.FetchMain(ctx, tmp)
	}
	if err != nil {
		done()
		return "", nil, err
	}
	return tmp, done, nil
}

func shortHash(h string) string {
	if len(h) > 7 {
		return h[:7]
	}
	return h
}

func newImportCmd(a *app) *cobra.Command {
	var name, dir string
	var overwrite, create, asJSON bool
	cmd := &cobra.Command{
		Use:   "import FILE|URL | import --dir DIR STORE",
		Short: "Create a store from a bundle or a git remote, or load a folder of files into a store",
		Long: `gitmem import FILE|URL creates a store from a git bundle (made by "gitmem export") or from any
git remote that holds a store's history: a path, file://, http(s):// (such as another gitmem's
/git/<memstore_id>.git) or ssh. The new store has the same id (from .gitmem/store.json), the same
history, and so the same memory and version ids. The history is fetched into a temporary
repository and checked with the rules of a push (every file in every commit a valid memory,
.gitmem/store.json valid) before anything becomes visible; a store with the same id must not
exist. Needs the git program.

gitmem import --dir DIR STORE writes every regular file below DIR into the existing STORE (by
id or name) as the memory at the same relative path, one version per file. It checks every file
first (UTF-8, at most 102,400 bytes, a valid memory path, no symbolic links) and writes nothing
if any fails. A memory that exists with the same content is left alone; one with different
content is refused unless --overwrite is given, which makes a new version of it. DIR/.git is
skipped. A refused folder exits 2 if any file breaks a rule, else 4 if a path is taken.

A refused history (a file that breaks a rule, no .gitmem/store.json) exits 2, a store with
its id already here 4, and a FILE or URL that git could not fetch 1.`,
		Example: `  gitmem import prefs.bundle
  gitmem import http://gitmem.example:7437/git/memstore_01M83BB1KXF10C9EEWAJM0FBRY.git
  gitmem import --dir ./notes prefs`,
		Args: func(cmd *cobra.Command, args []string) error {
			if dir != "" {
				return exactArgs("STORE")(cmd, args)
			}
			return exactArgs("FILE|URL")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir != "" {
				if name != "" {
					return usageError{fmt.Errorf("--name is for an import from a bundle or a remote")}
				}
				return a.importDir(cmd, dir, args[0], overwrite, create, asJSON)
			}
			if overwrite || create {
				return usageError{fmt.Errorf("--overwrite and --create are for an import with --dir")}
			}
			return a.importHistory(cmd, args[0], name, asJSON)
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "rename the imported store (one more commit of its metadata)")
	cmd.Flags().StringVar(&dir, "dir", "", "load the files below this folder into STORE")
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, "with --dir: replace memories whose content differs")
	cmd.Flags().BoolVar(&create, "create", false, "with --dir: create STORE (named so) if no store has that id or name")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the store and what was imported as JSON")
	return cmd
}

func (a *app) importHistory(cmd *cobra.Command, source, name string, asJSON bool) error {
	if err := gitexec.Need("import"); err != nil {
		return err
	}
	if name != "" {
		// Checked before anything is fetched; UpdateInfo checks it again.
		if strings.TrimSpace(name) == "" {
			return usageError{fmt.Errorf("--name is empty")}
		}
	}
	ctx := cmd.Context()
	return a.withData(ctx, func(d *gitstore.DataDir) error {
		tmp, err := d.PrepareImport()
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp) // gone already once adopted
		if err := runGit(tmp, io.Discard, cmd.ErrOrStderr(), "-c", "transfer.fsckObjects=true",
			"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", source, "+refs/heads/main:refs/heads/main"); err != nil {
			return fmt.Errorf("could not fetch main from %s; nothing was imported (%w)", source, err)
		}
		id, problems, err := gitserve.CheckImport(tmp)
		if err != nil {
			return fmt.Errorf("could not check the history from %s; nothing was imported (%w)", source, err)
		}
		if len(problems) > 0 { // bad input, as a push with them is refused: exit 2
			return invalidf("refused to import %s; nothing was imported:\n  %s", source, strings.Join(problems, "\n  "))
		}
		progress, done := progressBar(cmd.ErrOrStderr(), "reading history", "commits")
		s, err := d.ImportStore(ctx, tmp, progress)
		commits := done()
		if err != nil {
			if gitstore.IsKind(err, gitstore.KindConflict) || gitstore.IsKind(err, gitstore.KindInvalid) {
				return fmt.Errorf("%w; nothing was imported", err)
			}
			return err
		}
		if name != "" {
			if _, err := s.UpdateInfo(ctx, gitstore.StorePatch{Name: &name, Actor: cliActor()}); err != nil {
				return fmt.Errorf("imported store %s, but could not rename it: %w", id, err)
			}
		}
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		mems, err := allMemories(ctx, s, gitstore.ListOptions{})
		if err != nil {
			return err
		}
		versions, err := countVersions(ctx, s)
		if err != nil {
			return err
		}
		if asJSON {
			out := storeJSON(info)
			out["imported"] = map[string]any{"source": source, "memories": len(mems), "versions": versions, "commits": commits, "head": s.Head()}
			return printJSON(cmd.OutOrStdout(), out)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "imported store %s (%s) from %s: %d memories, %d versions, %d commits; head %s\n",
			info.ID, info.Name, source, len(mems), versions, commits, shortHash(s.Head()))
		return nil
	})
}
