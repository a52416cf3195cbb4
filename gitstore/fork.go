package gitstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitmem/gitmem/gitstore/internal/odb"
	"github.com/gitmem/gitmem/internal/durable"
	"github.com/gitmem/gitmem/internal/gitexec"
)

// A fork is a copy of a store, with the same id, whose writes stay in it until they are
// brought into the store's main by Integrate: a proposal is one. Its writes go through the
// same writer as the store's, so they are checked by the same rules (paths, content,
// secrets, quotas) and recorded in the same commit format, with version ids and actors that
// the store keeps when it takes the commits in.

// Fork copies the store into dir, which must not exist: dir/repo.git holds main fetched
// from the store's, dir/catalog.db a copy of its catalog (caught up with that main when the
// fork is opened). It needs the git program.
func (s *Store) Fork(ctx context.Context, dir string) error {
	_, err := s.ForkThen(ctx, dir, "", nil)
	return err
}

// ForkThen is Fork with the fork's main at commit, main's head or a commit of its history
// before it ("" for main as it is), and then, if not nil, run once the fork is made and
// before it takes its place at dir: then gets the fork's main, and may return a commit of
// main's that descends from it, which the fork's main moves to ("" to stay). If then
// fails, the fork is removed and its error returned. It returns the fork's main.
//
// A commit that main's history does not hold (a redaction rewrote it since) is refused
// (KindConflict). The catalog is copied as it is, at main's head: the fork's opening sets
// it back to commit (a rebuild of it if a merge came to main since commit). The commits
// after commit stay in the fork's repository, unreachable, as main's after a branch's base
// do in ForkBranch's.
//
// A proposal's fork is made so, and its opening recorded in main by then, so that a fork
// that fails (a full disk, as a fork copies the store) leaves no opening recorded: the
// recording is a small commit, and the fork can then take it.
func (s *Store) ForkThen(ctx context.Context, dir, commit string, then func(forked string) (string, error)) (string, error) {
	if err := refuseTrial(ctx, "a fork"); err != nil {
		return "", err
	}
	if err := needGit("a fork"); err != nil {
		return "", err
	}
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", NoSpace(err, s.opts.dataDir)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	// The catalog first: main only moves forward, so the main fetched next holds the
	// catalog's head, and opening the fork catches the catalog up from there.
	if err := s.copyCatalog(filepath.Join(tmp, "catalog.db")); err != nil {
		return "", NoSpace(fmt.Errorf("copy the catalog of %s: %w", s.id, err), s.opts.dataDir)
	}
	repo := filepath.Join(tmp, "repo.git")
	if err := odb.Init(repo); err != nil {
		return "", NoSpace(err, s.opts.dataDir)
	}
	forked, err := s.fetchMainAt(ctx, repo, commit)
	if err != nil {
		return "", err
	}
	if then != nil {
		next, err := then(forked)
		if err != nil {
			return "", err
		}
		if next != "" {
			if forked, err = s.fetchMainAt(ctx, repo, next); err != nil {
				return "", err
			}
		}
	}
	if err := durable.SyncDir(tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	ok = true
	return forked, durable.SyncDir(filepath.Dir(dir))
}

// fetchMainAt fetches the store's main into the repository repo and sets repo's main to
// commit, a commit of main's history ("" for main as fetched), and returns it. All of main
// is fetched: the commits after commit are what the catalog's copy is set back over, which
// reads them.
func (s *Store) fetchMainAt(ctx context.Context, repo, commit string) (string, error) {
	if _, err := gitexec.In(ctx, repo, "fetch", "--quiet", "--no-tags", s.repo.Path(), "+"+odb.MainRef+":"+odb.MainRef); err != nil {
		return "", NoSpace(fmt.Errorf("fork %s: %w", s.id, err), s.opts.dataDir)
	}
	if commit == "" {
		out, err := gitexec.In(ctx, repo, "rev-parse", "--verify", odb.MainRef+"^{commit}")
		return strings.TrimSpace(out), err
	}
	h, ok := parseHash(commit)
	if !ok {
		return "", invalidf("%q is not a commit", commit)
	}
	if _, err := gitexec.In(ctx, repo, "merge-base", "--is-ancestor", h.String(), odb.MainRef); err != nil {
		return "", &Error{Kind: KindConflict, Message: fmt.Sprintf("main's history does not hold commit %s", h), Err: err}
	}
	if _, err := gitexec.In(ctx, repo, "update-ref", odb.MainRef, h.String()); err != nil {
		return "", NoSpace(fmt.Errorf("fork %s at %s: %w", s.id, h, err), s.opts.dataDir)
	}
	return h.String(), nil
}

// OpenFork opens the fork of store id at dir (made by Fork). Close it with CloseFork: the
// data directory does not know of it.
func (d *DataDir) OpenFork(id, dir string) (*Store, error) {
	// As for the stores at the data directory's open: only this process writes a fork, so
	// a main.lock there is a crash's.
	d.cleanRepo(filepath.Join(dir, "repo.git"))
	opts := d.opts
	opts.fork = true
	s, err := openStore(id, filepath.Join(dir, "repo.git"), filepath.Join(dir, "catalog.db"), opts)
	if err == nil {
		s.fork = true
	}
	return s, err
}

// CloseFork closes a store opened by OpenFork, once every write queued to it is answered.
func (s *Store) CloseFork() error { return s.close() }

// TakeBranch fetches the main of a fork's repository (dir, made by Fork) into the store's
// repository as ref (refs/heads/...), and returns the commit: Integrate then brings it into
// main.
func (s *Store) TakeBranch(ctx context.Context, dir, ref string) (string, error) {
	if err := refuseTrial(ctx, "taking a branch"); err != nil {
		return "", err
	}
	if err := needGit("taking a branch"); err != nil {
		return "", err
	}
	if _, err := gitexec.In(ctx, s.repo.Path(), "fetch", "--quiet", "--no-tags", filepath.Join(dir, "repo.git"), "+"+odb.MainRef+":"+ref); err != nil {
		return "", NoSpace(fmt.Errorf("fetch %s into %s: %w", dir, s.id, err), s.opts.dataDir)
	}
	out, err := gitexec.In(ctx, s.repo.Path(), "rev-parse", "--verify", ref+"^{commit}")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// ForkBranch makes the fork at dir (or, if dir holds one, updates it) with the branch ref of
// the store's repository (refs/heads/proposals/..., pushed with git) as its main, and returns
// the commit where the branch leaves main: the fork's base. The fork must not be open.
func (s *Store) ForkBranch(ctx context.Context, dir, ref string) (base string, err error) {
	if err := refuseTrial(ctx, "a fork of a branch"); err != nil {
		return "", err
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := s.Fork(ctx, dir); err != nil {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	repo := filepath.Join(dir, "repo.git")
	if _, err := gitexec.In(ctx, repo, "fetch", "--quiet", "--no-tags", s.repo.Path(), "+"+ref+":"+odb.MainRef); err != nil {
		return "", NoSpace(fmt.Errorf("fork %s from %s: %w", s.id, ref, err), s.opts.dataDir)
	}
	out, err := gitexec.In(ctx, s.repo.Path(), "merge-base", ref, odb.MainRef)
	if err != nil {
		return "", &Error{Kind: KindInvalid, Message: fmt.Sprintf("%s shares no history with main", ref), Err: err}
	}
	return strings.TrimSpace(out), nil
}

// Branches returns the branches of the store's repository under prefix (refs/heads/...),
// with the commit each is at.
func (s *Store) Branches(ctx context.Context, prefix string) (map[string]string, error) {
	out, err := gitexec.In(ctx, s.repo.Path(), "for-each-ref", "--format=%(refname) %(objectname)", prefix)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if ref, h, ok := strings.Cut(line, " "); ok {
			m[ref] = h
		}
	}
	return m, nil
}

// StampApproval records the approver in each commit of a proposal's branch, already fetched
// into the store's repository: it rewrites the commits after base up to head with a
// Gitmem-Approved-By trailer, and returns the new head, for Integrate to take in. The
// versions keep their ids: gitmem's commits name theirs in trailers, and a commit made with
// plain git keeps the hash its ids derive from (Gitmem-Derived-From). Each version in main
// then says who approved it (Version.ApprovedBy).
func (s *Store) StampApproval(ctx context.Context, base, head string, approver Actor) (string, error) {
	out, err := gitexec.In(ctx, s.repo.Path(), "rev-list", "--topo-order", "--reverse", head, "^"+base)
	if err != nil {
		return "", err
	}
	stamped := head
	err = s.runTask(ctx, func() error {
		s.repo.Reload() // git fetch wrote packs that the set of packs does not list yet
		newOf := map[plumbing.Hash]plumbing.Hash{}
		var objs []plumbing.EncodedObject
		for _, hs := range strings.Fields(out) {
			h, ok := parseHash(hs)
			if !ok {
				return fmt.Errorf("stamp approval: %q is not a commit", hs)
			}
			c, err := s.repo.commit(h)
			if err != nil {
				return err
			}
			nc := &object.Commit{Author: c.Author, Committer: c.Committer, TreeHash: c.TreeHash,
				Message: stampMessage(c.Message, h, approver)}
			for _, p := range c.ParentHashes {
				if np, ok := newOf[p]; ok {
					p = np
				}
				nc.ParentHashes = append(nc.ParentHashes, p)
			}
			o := &plumbing.MemoryObject{}
			if err := nc.Encode(o); err != nil {
				return err
			}
			newOf[h] = o.Hash()
			objs = append(objs, o)
			stamped = o.Hash().String()
		}
		if len(objs) == 0 {
			return nil
		}
		return s.repo.WritePack(objs)
	})
	return stamped, err
}

// stampMessage is a commit message with the approver's trailer added, and, for a commit made
// with plain git, the hash that its ids derive from.
func stampMessage(msg string, h plumbing.Hash, approver Actor) string {
	t := parseTrailers(msg)
	add := trailers{{trailerApprovedBy, string(approver.Type) + " " + approver.ID}}
	if _, _, gitmem := t.version(); !gitmem && t.get(trailerDerivedFrom) == "" {
		add = append(add, struct{ Key, Value string }{trailerDerivedFrom, h.String()})
	}
	msg = strings.TrimRight(msg, "\n")
	if t == nil {
		msg += "\n"
	}
	for _, kv := range add {
		msg += "\n" + kv.Key + ": " + kv.Value
	}
	return msg + "\n"
}

// ProposalBranches is the folder of a store's repository that holds the branches of its
// proposals: pushed ones (proposals/NAME) and those of the API's (proposals/<prop_id>).
const ProposalBranches = "refs/heads/proposals/"

// SetBranch points the branch ref (refs/heads/proposals/...) of the store's repository at
// commit, or deletes it if commit is "". Main is not a branch it sets.
func (s *Store) SetBranch(ctx context.Context, ref, commit string) error {
	return s.updateBranch(ctx, ref, commit)
}

// UndoBranch moves the branch ref (refs/heads/proposals/...) back to commit was, or deletes it
// if was is "", if it is still at commit at: a push that moved it may have lost it to another
// meanwhile.
func (s *Store) UndoBranch(ctx context.Context, ref, was, at string) error {
	return s.updateBranch(ctx, ref, was, at)
}

// updateBranch points proposal branch ref at commit ("" deletes it), if it is at old (git
// update-ref's compare, when given).
func (s *Store) updateBranch(ctx context.Context, ref, commit string, old ...string) error {
	if err := refuseTrial(ctx, "a branch's update"); err != nil {
		return err
	}
	if !strings.HasPrefix(ref, ProposalBranches) {
		return invalidf("%s is not a proposal branch", ref)
	}
	args := []string{"update-ref", ref, commit}
	if commit == "" {
		args = []string{"update-ref", "-d", ref}
	}
	_, err := gitexec.In(ctx, s.repo.Path(), append(args, old...)...)
	return err
}
