package proposals

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/oklog/ulid/v2"

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

// load reads the proposals of store storeID, in the list's order, and their places: from
// their records, or from the single file of before, which it moves into records.
func (m *Manager) load(storeID string) ([]Proposal, map[string]int64, error) {
	b, err := os.ReadFile(m.data.Layout().ProposalsFile(storeID))
	switch {
	case err == nil:
		var l []Proposal
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, nil, fmt.Errorf("read the proposals of %s: %w", storeID, err)
		}
		for _, p := range l {
			if err := checkNames(storeID, p, p.ID); err != nil {
				return nil, nil, fmt.Errorf("read the proposals of %s: %w", storeID, err)
			}
		}
		seq, err := m.migrate(storeID, l)
		for i := range l {
			l[i] = listed(l[i]) // the threads are in the records now
		}
		return l, seq, err
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
	rest, ok := strings.CutPrefix(p.ID, Prefix)
	if _, err := ulid.ParseStrict(rest); !ok || err != nil || p.ID != want {
		return fmt.Errorf("proposal %q is not a proposal id, or not that of its record", p.ID)
	}
	if p.StoreID != storeID {
		return fmt.Errorf("proposal %s is of memory store %q", p.ID, p.StoreID)
	}
	return nil
}

// migrate moves the list l, read from the single file of before, into records: each one
// written, then the file removed. A crash in between leaves the file, which the next use
// reads and moves again. The file is the list: a record of a proposal that it does not hold
// is removed. It returns the records' places: the list's order.
func (m *Manager) migrate(storeID string, l []Proposal) (map[string]int64, error) {
	seq := make(map[string]int64, len(l))
	for i, p := range l {
		seq[p.ID] = int64(i) + 1
	}
	var gone []string
	entries, err := os.ReadDir(m.data.Layout().ProposalForks(storeID))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if id, ok := m.data.Layout().RecordProposal(e.Name()); ok && !e.IsDir() && seq[id] == 0 {
			gone = append(gone, id)
		}
	}
	if err := m.writeRecords(storeID, l, seq, gone); err != nil {
		return nil, fmt.Errorf("move the proposals of %s into records: %w", storeID, err)
	}
	if err := os.Remove(m.data.Layout().ProposalsFile(storeID)); err != nil {
		return nil, fmt.Errorf("move the proposals of %s into records: %w", storeID, err)
	}
	return seq, durable.SyncDir(m.data.Layout().ProposalsDir())
}

// writeRecords writes the records of the proposals changed, at their places seq, and removes
// those of the proposals gone, durably: the directory is fsynced once, after all of them.
func (m *Manager) writeRecords(storeID string, changed []Proposal, seq map[string]int64, gone []string) error {
	layout := m.data.Layout()
	dir := layout.ProposalForks(storeID)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return gitstore.NoSpace(err, m.data.Dir())
		}
		if err := durable.SyncDir(layout.ProposalsDir()); err != nil { // the directory's name
			return err
		}
	}
	for _, p := range changed {
		b, err := json.MarshalIndent(record{Seq: seq[p.ID], Proposal: p}, "", "  ")
		if err != nil {
			return err
		}
		if err := durable.Replace(layout.ProposalRecord(storeID, p.ID), b, 0o600); err != nil {
			return gitstore.NoSpace(err, m.data.Dir())
		}
	}
	for _, id := range gone {
		if err := os.Remove(layout.ProposalRecord(storeID, id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return durable.SyncDir(dir)
}
