package gitstore

import (
	"errors"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitmem/gitmem/gitstore/internal/odb"
)

// The object database (packs, loose objects, the main ref) is internal/odb; these are its
// names as the store's code uses them.
const mainRef = odb.MainRef

var (
	// errRefMoved means the ref was not at the commit a write built on.
	errRefMoved = odb.ErrRefMoved
	parseHash   = odb.ParseHash
	readEncoded = odb.ReadEncoded
)

// repo is a store's bare repository: the object database, with what the store adds. Its
// own methods are the reads that the store's code shares with the writer's pending objects
// (object and commit, for objectReader), the walks of history that the catalog needs
// (catchup.go, plain.go), and casRef and lockRef, which give a main.lock held by another
// git process the store's error kind. Everything else is odb.Repo's.
type repo struct{ *odb.Repo }

func openRepo(path string) (*repo, error) { return openRepoOf(path, false) }

// openRepoOf opens the repository at path, of a fork if fork (odb.OpenFewSpares: a fork is
// written now and then, and keeps no files ready for its writer).
func openRepoOf(path string, fork bool) (*repo, error) {
	open := odb.Open
	if fork {
		open = odb.OpenFewSpares
	}
	r, err := open(path)
	if err != nil {
		return nil, err
	}
	return &repo{r}, nil
}

// object reads one object.
func (r *repo) object(h plumbing.Hash) (plumbing.EncodedObject, error) { return r.Object(h) }

// commit reads and decodes a commit.
func (r *repo) commit(h plumbing.Hash) (*object.Commit, error) {
	return readCommit(r, h)
}

// casRef moves main from old to new, durably (odb.Repo.CASRef); it returns errRefMoved if
// main was not at old.
func (r *repo) casRef(old, new plumbing.Hash) error { return refError(r.CASRef(old, new)) }

// publish makes a group durable and visible (odb.Repo.Publish).
func (r *repo) publish(objs []plumbing.EncodedObject, old, new plumbing.Hash) (odb.PublishTiming, error) {
	t, err := r.Publish(objs, old, new)
	return t, refError(err)
}

// lockRef takes main.lock (odb.Repo.LockRef).
func (r *repo) lockRef() (*odb.RefLock, error) {
	l, err := r.LockRef()
	return l, refError(err)
}

// refError gives odb.ErrRefLocked (main.lock held by another git process) the store's kind.
func refError(err error) error {
	if errors.Is(err, odb.ErrRefLocked) {
		return &Error{Kind: KindUnavailable, Message: err.Error() + RetryHint, Err: err}
	}
	return err
}
