package proposals

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/durable"
)

// How a store's proposals are kept. Each proposal is a record of its own,
// proposals/<store_id>/<prop_id>.json beside its fork (gitstore.Layout.ProposalRecord),
// replaced durably (durable: a temporary file, fsynced, renamed, the directory fsynced) when
// the proposal changes, before the change is answered. So a comment or a decision costs the
// writing of one proposal, at most MaxComments comments of MaxComment bytes, however many
// proposals the store keeps: its MaxDecided decided ones keep their threads. The store's list
// was one file, rewritten whole at each change, which at those bounds held 420 MB and took
// seconds to write; a data directory may still hold it (gitstore.Layout.ProposalsFile), and
// the first use of the store's proposals moves it into records (migrate).

// record is a proposal as its file holds it, with its place in the store's list.
type record struct {
	// Seq orders the store's proposals as they opened (the list's order): greater than
	// every record's that the store had when the proposal opened.
	Seq int64 `json:"seq"`
	Proposal
}

// load reads the proposals of store storeID, listed, in the list's order, and their places: from
// their records, or from the single file of before, which it moves into records.
func (m *Manager) load(storeID string) ([]Proposal, map[string]int64, error) {
	f, err := os.Open(m.data.Layout().ProposalsFile(storeID))
	switch {
	case err == nil:
		defer f.Close()
		return m.migrate(storeID, f)
	case !errors.Is(err, os.ErrNotExist):
		return nil, nil, err
	}
	dir := m.data.Layout().ProposalForks(storeID)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, map[string]int64{}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var recs []record
	for _, e := range entries {
		id, ok := m.data.Layout().RecordProposal(e.Name())
		if !ok || e.IsDir() {
			continue
		}
		r, err := m.readSeq(storeID, id)
		if err != nil {
			return nil, nil, err
		}
		r.Proposal = listed(r.Proposal) // its thread stays on disk
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b record) int { return cmp.Compare(a.Seq, b.Seq) })
	l := make([]Proposal, len(recs))
	seq := make(map[string]int64, len(recs))
	for i, r := range recs {
		l[i], seq[r.ID] = r.Proposal, r.Seq
	}
	return l, seq, nil
}

// readRecord reads proposal id of store storeID whole from its record.
func (m *Manager) readRecord(storeID, id string) (Proposal, error) {
	r, err := m.readSeq(storeID, id)
	return r.Proposal, err
}

// readSeq reads the record of proposal id of store storeID: the proposal whole, and its place.
func (m *Manager) readSeq(storeID, id string) (record, error) {
	path := m.data.Layout().ProposalRecord(storeID, id)
	b, err := os.ReadFile(path)
	if err != nil {
		return record{}, fmt.Errorf("read the proposals of %s: %w", storeID, err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return record{}, fmt.Errorf("read the proposals of %s: %s: %w", storeID, filepath.Base(path), err)
	}
	if err := checkNames(storeID, r.Proposal, id); err != nil {
		return record{}, fmt.Errorf("read the proposals of %s: %s: %w", storeID, filepath.Base(path), err)
	}
	return r, nil
}

// checkNames refuses a proposal p, read from store storeID's records or its file of before,
// whose id is not a proposal id or not want (its record's name), or whose store is another:
// its id and store name its record's and its fork's files (gitstore.Layout.ProposalRecord,
// ProposalFork), which are written and removed, so that one such as "../../keys" would reach
// files outside the store's proposals.
func checkNames(storeID string, p Proposal, want string) error {
	if !isID(p.ID) || p.ID != want {
		return fmt.Errorf("proposal %q is not a proposal id, or not that of its record", p.ID)
	}
	if p.StoreID != storeID {
		return fmt.Errorf("proposal %s is of memory store %q", p.ID, p.StoreID)
	}
	return nil
}

// migrate moves the list in file, the single file of before, into records, one proposal at
// a time, so that the list's threads are not held all at once (420 MB at the bounds): each
// record written, then the file removed. The file is read whole and checked first, and
// nothing written, so that a file refused (not one list of proposals, bytes after its end, a
// proposal refused by checkNames) leaves everything as it was: the file, and no record. A
// crash in between leaves the file, which the next use reads and moves again. The file is
// the list: a record of a proposal that it does not hold is removed. It returns the list,
// listed, and the records' places: the list's order.
func (m *Manager) migrate(storeID string, file *os.File) ([]Proposal, map[string]int64, error) {
	fail := func(err error) ([]Proposal, map[string]int64, error) {
		return nil, nil, fmt.Errorf("move the proposals of %s into records: %s: %w", storeID, file.Name(), err)
	}
	if err := eachListed(file, func(p Proposal) error { return checkNames(storeID, p, p.ID) }); err != nil {
		return fail(err)
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return fail(err)
	}
	if err := m.recordsDir(storeID); err != nil {
		return fail(err)
	}
	var l []Proposal
	seq := map[string]int64{}
	err := eachListed(file, func(p Proposal) error {
		seq[p.ID] = int64(len(l)) + 1
		l = append(l, listed(p))
		return m.writeRecord(storeID, p, seq[p.ID])
	})
	if err != nil {
		return fail(err)
	}
	var gone []string
	entries, err := os.ReadDir(m.data.Layout().ProposalForks(storeID))
	if err != nil {
		return fail(err)
	}
	for _, e := range entries {
		if id, ok := m.data.Layout().RecordProposal(e.Name()); ok && !e.IsDir() && seq[id] == 0 {
			gone = append(gone, id)
		}
	}
	if err := m.writeRecords(storeID, nil, seq, gone); err != nil { // and the directory synced
		return fail(err)
	}
	if err := os.Remove(m.data.Layout().ProposalsFile(storeID)); err != nil {
		return fail(err)
	}
	return l, seq, durable.SyncDir(m.data.Layout().ProposalsDir())
}

// eachListed calls fn with each proposal of the list that r holds (JSON null: none), in its
// order, one at a time, and stops at fn's first error. Anything but one list of proposals is
// an error, bytes after the list's end too: a file cut or corrupted there is not taken as
// whole.
func eachListed(r io.Reader, fn func(Proposal) error) error {
	dec := json.NewDecoder(r)
	t, err := dec.Token()
	if err != nil {
		return err
	}
	list := t == json.Delim('[')
	if !list && t != nil {
		return errors.New("the file is not a list of proposals")
	}
	for list && dec.More() {
		var p Proposal
		if err := dec.Decode(&p); err != nil {
			return err
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); list && err != nil { // the list's end
		return err
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("bytes follow the end of the list, past byte %d: the file is cut or corrupted", end)
	}
	return nil
}

// writeRecords writes the records of the proposals changed, at their places seq, and removes
// those of the proposals gone, durably: the directory is fsynced once, after all of them.
func (m *Manager) writeRecords(storeID string, changed []Proposal, seq map[string]int64, gone []string) error {
	layout := m.data.Layout()
	dir := layout.ProposalForks(storeID)
	if err := m.recordsDir(storeID); err != nil {
		return err
	}
	for _, p := range changed {
		if err := m.writeRecord(storeID, p, seq[p.ID]); err != nil {
			return err
		}
	}
	for _, id := range gone {
		if err := os.Remove(layout.ProposalRecord(storeID, id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return durable.SyncDir(dir)
}

// recordsDir makes the directory of store storeID's records, durably, if it is not there.
func (m *Manager) recordsDir(storeID string) error {
	dir := m.data.Layout().ProposalForks(storeID)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return gitstore.NoSpace(err, m.data.Dir())
	}
	return durable.SyncDir(m.data.Layout().ProposalsDir()) // the directory's name
}

// writeRecord replaces the record of proposal p, at place seq, with a synced file; the
// directory is the caller's to sync after it (durable.Replace).
func (m *Manager) writeRecord(storeID string, p Proposal, seq int64) error {
	b, err := json.MarshalIndent(record{Seq: seq, Proposal: p}, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.Replace(m.data.Layout().ProposalRecord(storeID, p.ID), b, 0o600); err != nil {
		return gitstore.NoSpace(err, m.data.Dir())
	}
	return nil
}
