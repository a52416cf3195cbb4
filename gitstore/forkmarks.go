package gitstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/gitmem/gitmem/internal/durable"
)

// A store's forks (the proposals' copies of its history, package proposals) hold every
// version written before they were made, out of reach of the store's own redaction. So that
// a redaction reaches them whoever runs it, every redaction of a store that has forks lists
// its version in Layout.ForksRedacting before the store's history is touched, and the list
// keeps it until the forks have it too: the data directory's RedactWrapper redacts them
// and then calls ForksCaughtUp. A redaction run where no wrapper is set (a process that
// made no proposals manager) or stopped by a crash leaves the version listed, and the next
// use of the store's proposals redacts the forks from the list before anyone reads them.

// forkMarks serializes the changes of the data directory's ForksRedacting lists.
type forkMarks struct {
	mu     sync.Mutex
	layout Layout
}

// ForksRedacting lists the versions of store id that the store redacted, or began to, and
// that its forks may not have redacted yet.
func (d *DataDir) ForksRedacting(id string) ([]string, error) {
	d.opts.forkMarks.mu.Lock()
	defer d.opts.forkMarks.mu.Unlock()
	return d.opts.forkMarks.read(id)
}

// ForksCaughtUp takes version off the ForksRedacting list of store id: each of its forks has
// the redaction, or the store did not redact it.
func (d *DataDir) ForksCaughtUp(id, version string) error {
	return d.opts.forkMarks.set(id, version, false)
}

// listForks lists the version that in is about to redact, if the store has forks, and
// reports whether it did.
func (s *Store) listForks(in RedactInput) (bool, error) {
	if s.fork || s.opts.forkMarks == nil {
		return false, nil
	}
	m := s.opts.forkMarks
	m.mu.Lock() // the forks are looked for and listed under it, as DeleteStore removes them
	defer m.mu.Unlock()
	entries, err := os.ReadDir(m.layout.ProposalForks(s.id))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if !slices.ContainsFunc(entries, os.DirEntry.IsDir) {
		return false, nil
	}
	if err := m.setLocked(s.id, in.VersionID, true); err != nil {
		return false, err
	}
	return true, nil
}

// unlistRefused takes the version of in off the list again when the store refused the
// redaction (err): the forks have nothing to follow. Only a refusal, which comes before
// anything is written: a failure after main moved can leave the catalog behind main (it
// could not record the redaction), and the catalog would say the version is not redacted
// while main's history is. Any other failure leaves the version listed, for the next use of
// the store's proposals to redact it in the forks or take it off.
func (s *Store) unlistRefused(ctx context.Context, in RedactInput, err error) {
	if !IsKind(err, KindInvalid) && !IsKind(err, KindNotFound) {
		return
	}
	v, err := s.Version(context.WithoutCancel(ctx), in.VersionID, false)
	if IsKind(err, KindNotFound) || (err == nil && v.RedactedAt == nil) {
		if err := s.opts.forkMarks.set(s.id, in.VersionID, false); err != nil {
			s.opts.Logger.Warn("unlist a refused redaction for the forks", "store", s.id, "version", in.VersionID, "err", err)
		}
	}
}

// read returns the list of store id. m.mu is held.
func (m *forkMarks) read(id string) ([]string, error) {
	b, err := os.ReadFile(m.layout.ForksRedacting(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return strings.Fields(string(b)), err
}

// set adds version to the list of store id, or takes it off, durably.
func (m *forkMarks) set(id, version string, add bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.setLocked(id, version, add)
}

// setLocked is set with m.mu held.
func (m *forkMarks) setLocked(id, version string, add bool) error {
	ids, err := m.read(id)
	if err != nil {
		return err
	}
	had := slices.Contains(ids, version)
	switch {
	case add && !had:
		ids = append(ids, version)
	case !add && had:
		ids = slices.DeleteFunc(ids, func(s string) bool { return s == version })
	default:
		return nil
	}
	path := m.layout.ForksRedacting(id)
	if len(ids) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return durable.SyncDir(filepath.Dir(path))
	}
	return NoSpace(durable.WriteFile(path, []byte(strings.Join(ids, "\n")+"\n"), 0o600), m.layout.Root)
}
