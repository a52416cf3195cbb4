// Package proposals keeps the proposals of a data directory's stores: changes that an agent
// (a key with access propose) makes to a fork of a store instead of its main, for a person to
// approve, in whole, or to reject.
//
// A proposal's fork (gitstore.Store.Fork) has the store's id and its own repository and
// catalog: every write to it is checked by the store's rules and recorded in the store's
// commit format, one commit per change, with its version id and actor. The proposer reads
// the fork: main as it was when the proposal opened, with the proposal applied. Approval
// takes the fork's main into the store's repository as the branch proposals/<prop_id> and
// merges it into main by the rules sync has (gitstore.Store.Integrate), so the versions in
// main are the ones the proposer made, by the proposer. Each proposal's record, with its
// title, state and comments, is a file of its own beside its fork (records.go).
package proposals

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/durable"
	"github.com/gitmem/gitmem/internal/english"
	"github.com/gitmem/gitmem/internal/suspect"
)

// Prefix starts every proposal id.
const Prefix = "prop_"

// State is where a proposal is in its review.
type State string

// The states of a proposal.
const (
	Open     State = "open"
	Approved State = "approved"
	Rejected State = "rejected"
	// Superseded: once another approval made main hold everything it proposed, it has
	// nothing left to decide.
	Superseded State = "superseded"
)

// Limits of what a proposal holds.
const (
	MaxTitle    = 200
	MaxComment  = 4_000
	MaxComments = 100
	// MaxKeptRejected is how many rejected proposals of a store keep their fork (their
	// changes, to read); older ones keep their record and thread only.
	MaxKeptRejected = 16
	// MaxDecided is how many decided proposals a store's list keeps; older ones are dropped
	// from it (their steps stay in the history, as events).
	MaxDecided = 1000
)

// Limits bound the open proposals, each a fork: a copy of the store, on disk, that every
// redaction of the store rewrites too.
type Limits struct {
	// Open bounds the open proposals of a store.
	Open int
	// OpenPerKey bounds the open proposals of one key in a store (its sessions' and its
	// pushed branches'), so that one key cannot take all Open: a session id is the client's
	// to choose, and each new one opens a proposal.
	OpenPerKey int
}

// DefaultLimits are the limits of a zero Limits field. 8 lets a key keep that many sessions
// waiting for review at once, an eighth of the store's.
var DefaultLimits = Limits{Open: 64, OpenPerKey: 8}

// withDefaults fills the zero (or negative) fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	if l.Open <= 0 {
		l.Open = DefaultLimits.Open
	}
	if l.OpenPerKey <= 0 {
		l.OpenPerKey = DefaultLimits.OpenPerKey
	}
	return l
}

// ByKey tells whether p was opened by key keyID: by the key itself, one of its sessions, or
// a branch it pushed. The key is who may read and discuss a proposal that a propose key made
// (the API, the UI, git): a session id is the client's to choose, so sessions of one key are
// not kept from each other.
func (p Proposal) ByKey(keyID string) bool {
	return keyID != "" && p.Author.Store().KeyID() == keyID
}

// ReadableBy tells whether a caller with key keyID may read and discuss p: a propose key
// (proposes) its own key's only (ByKey); any other caller that may read the store, all.
func (p Proposal) ReadableBy(keyID string, proposes bool) bool {
	return !proposes || p.ByKey(keyID)
}

// Actor is an actor as a proposal's record keeps it.
type Actor struct {
	Type     gitstore.ActorType `json:"type"`
	ID       string             `json:"id"`
	Name     string             `json:"name,omitempty"`
	Email    string             `json:"email,omitempty"`
	APIKeyID string             `json:"api_key_id,omitempty"`
}

// ActorOf is a store's actor as a proposal's record keeps it.
func ActorOf(a gitstore.Actor) Actor {
	return Actor{Type: a.Type, ID: a.ID, Name: a.Name, Email: a.Email, APIKeyID: a.APIKeyID}
}

// Store is the actor as a store's.
func (a Actor) Store() gitstore.Actor {
	return gitstore.Actor{Type: a.Type, ID: a.ID, Name: a.Name, Email: a.Email, APIKeyID: a.APIKeyID}
}

// Comment is one comment of a proposal's thread.
type Comment struct {
	Author    Actor     `json:"author"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
}

// Proposal is one proposal of a store.
type Proposal struct {
	ID      string `json:"id"`
	StoreID string `json:"memory_store_id"`
	Title   string `json:"title"`
	Author  Actor  `json:"author"`
	State   State  `json:"state"`
	// Base is main's commit when the proposal opened.
	Base      string     `json:"base"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	DecidedBy *Actor     `json:"decided_by,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	// Merge is main's commit after the approval.
	Merge    string    `json:"merge,omitempty"`
	Comments []Comment `json:"comments"`
	// Dropped: a rejected proposal whose changes are no longer kept (MaxKeptRejected).
	Dropped bool `json:"dropped,omitempty"`
	// Branch is the branch of the store's repository that a git push opened the proposal
	// with (refs/heads/proposals/NAME); a push to it again updates the proposal.
	Branch string `json:"branch,omitempty"`
	// Writing: the proposal's fork was opened to writes since UpdatedAt last took them in,
	// so UpdatedAt may miss some (the record is not saved at each write): the answers read
	// them from the fork (current). Set before a manager opens the fork (fork), so that it
	// holds after a crash too; cleared when a manager closes the fork (Close).
	Writing bool `json:"writing,omitempty"`
	// earlier is how many comments of the thread come before Comments: none in a proposal
	// read whole (Get, and what a change answers); in a listed one (listed), the thread but
	// its last ListedComments.
	earlier int
}

// ListedComments is how many comments, the last ones, a listed proposal holds (Page):
// a list answers no more of each thread, and the manager keeps no more of it in memory.
const ListedComments = 1

// CommentCount is the length of p's thread, a listed proposal's too.
func (p Proposal) CommentCount() int { return p.earlier + len(p.Comments) }

// listed is p as the manager keeps it in memory and lists it: with the last ListedComments
// comments of its thread only, copied, so that the rest of the thread is not held. The whole
// proposal is its record's (whole).
func listed(p Proposal) Proposal {
	n := max(0, len(p.Comments)-ListedComments)
	p.Comments, p.earlier = slices.Clone(p.Comments[n:]), p.earlier+n
	return p
}

// Manager keeps the proposals of the stores of one data directory, and the forks of the
// open ones. Its methods are safe for concurrent use.
type Manager struct {
	data   *gitstore.DataDir
	limits Limits

	mu     sync.Mutex                 // guards stores
	stores map[string]*storeProposals // by store id
	closed atomic.Bool
}

// storeProposals is what the manager holds of one store's proposals. Every operation on
// them holds its mu (Manager.lock), and none holds two stores' at once: operations on
// different stores, such as an approval's merge and another store's writes, do not wait for
// each other.
type storeProposals struct {
	mu sync.Mutex
	// list is the store's proposals, listed (listed), in the order of their records, once
	// read: what the list, its filters and the bounds of open proposals use. A proposal's
	// thread is read from its record when it is asked for or changed (whole), so that what is
	// held of a store is bounded by its proposals and not by their threads.
	list  []Proposal
	seq   map[string]int64           // the place of each proposal of list, as its record holds it
	read  bool                       // list was read
	forks map[string]*gitstore.Store // open forks, by proposal id
}

// of returns what the manager holds of store storeID's proposals, made if need be; its mu
// is the caller's to take (lock), or held already.
func (m *Manager) of(storeID string) *storeProposals {
	m.mu.Lock()
	defer m.mu.Unlock()
	sp := m.stores[storeID]
	if sp == nil {
		sp = &storeProposals{forks: map[string]*gitstore.Store{}}
		m.stores[storeID] = sp
	}
	return sp
}

// lock takes the lock of store storeID's proposals, and returns what releases it. Once
// Close has begun it takes nothing and fails with gitstore.ErrStoreClosed (retryable): an
// operation that comes after Close, as a request that outlived the server's shutdown may,
// would open forks that nothing closes, or change records behind the next manager. The check
// is made under the store's lock, which Close holds while it closes the store's forks.
func (m *Manager) lock(storeID string) (unlock func(), err error) {
	sp := m.of(storeID)
	sp.mu.Lock()
	if m.closed.Load() {
		sp.mu.Unlock()
		return nil, gitstore.ErrStoreClosed
	}
	return sp.mu.Unlock, nil
}

// New returns the manager of data's proposals, with DefaultLimits. It wraps the redactions
// of data's stores (redact.go), so that a version redacted in a store is redacted in its
// proposals too; make one manager of a data directory at a time.
func New(data *gitstore.DataDir) *Manager { return NewWithLimits(data, DefaultLimits) }

// NewWithLimits is New with the limits l (a zero field: DefaultLimits').
func NewWithLimits(data *gitstore.DataDir, l Limits) *Manager {
	m := &Manager{data: data, limits: l.withDefaults(), stores: map[string]*storeProposals{}}
	data.WrapRedact(m.redact)
	return m
}

// Forget closes the open forks of a store that was deleted (DataDir.DeleteStore removes
// its proposals) and forgets its list.
func (m *Manager) Forget(storeID string) {
	unlock, err := m.lock(storeID)
	if err != nil {
		return // closed: Close closed its forks
	}
	defer unlock()
	sp := m.of(storeID)
	for id, f := range sp.forks {
		f.CloseFork()
		delete(sp.forks, id)
	}
	sp.list, sp.seq, sp.read = nil, nil, false
}

// Close closes the open forks, and saves in each open proposal's UpdatedAt its fork's last
// write (Writing), so that the next manager need not open the fork to answer it. After it,
// every operation on the proposals fails with gitstore.ErrStoreClosed (lock), and opens and
// changes nothing; a redaction of a store goes on without its forks (redact).
func (m *Manager) Close() error {
	m.closed.Store(true)
	m.mu.Lock()
	stores := maps.Clone(m.stores)
	m.mu.Unlock()
	var errs []error
	for storeID, sp := range stores {
		errs = append(errs, m.closeStore(storeID, sp))
	}
	return errors.Join(errs...)
}

// closeStore is Close for the store storeID, whose proposals are sp.
func (m *Manager) closeStore(storeID string, sp *storeProposals) error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	var errs []error
	last := map[string]time.Time{} // by proposal id
	for id, f := range sp.forks {
		moved := f.Moved()
		base := ""
		if i := slices.IndexFunc(sp.list, func(p Proposal) bool { return p.ID == id }); i >= 0 {
			base = sp.list[i].Base
		}
		t, err := lastWrite(f, base)
		errs = append(errs, f.CloseFork())
		delete(sp.forks, id)
		select {
		case <-moved: // written to since t was read: the next manager reads the fork
		default:
			if err == nil {
				last[id] = t
			}
		}
	}
	var changed []Proposal
	for _, p := range sp.list {
		if t, ok := last[p.ID]; ok && p.Writing {
			w, err := m.readRecord(storeID, p.ID)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			w.UpdatedAt, w.Writing = later(w.UpdatedAt, t), false
			changed = append(changed, w)
		}
	}
	if len(changed) > 0 {
		errs = append(errs, m.save(storeID, changed))
	}
	return errors.Join(errs...)
}

func notFound(storeID, id string) error {
	return &gitstore.Error{Kind: gitstore.KindNotFound, Message: fmt.Sprintf("memory store %s has no proposal %s", storeID, id)}
}

// list returns the proposals of a store. The store's lock is held.
func (m *Manager) list(storeID string) ([]Proposal, error) {
	sp := m.of(storeID)
	if sp.read {
		return sp.list, nil
	}
	l, seq, err := m.load(storeID)
	if err != nil {
		return nil, err
	}
	sp.list, sp.seq, sp.read = l, seq, true
	m.removeOrphans(storeID, l)
	// A redaction that a crash interrupted before it reached the forks: finished before
	// anyone reads them.
	if err := m.finishRedactions(context.Background(), storeID); err != nil {
		sp.list, sp.seq, sp.read = nil, nil, false
		return nil, fmt.Errorf("finish redacting the proposals of %s (redact the version again): %w", storeID, err)
	}
	return sp.list, nil
}

// removeOrphans removes the fork directories of store storeID that no proposal of l names:
// what a crash left between making a fork and saving its proposal, or a fork half made.
// Nothing would read them, nor redact them: they may hold what the store has redacted since.
// It removes the temporary files that a crash left among the records too. The store's lock
// is held, so that no fork or record is being made.
func (m *Manager) removeOrphans(storeID string, l []Proposal) {
	dir := m.data.Layout().ProposalForks(storeID)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // none; or unreadable, which the forks' own use will report
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasPrefix(e.Name(), durable.TempPrefix) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
		if !e.IsDir() || slices.ContainsFunc(l, func(p Proposal) bool { return p.ID == e.Name() }) {
			continue
		}
		m.data.Logger().Warn("removing a proposal's fork that no proposal names (left by a crash)", "store", storeID, "dir", e.Name())
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			m.data.Logger().Error("remove a fork that no proposal names", "store", storeID, "dir", e.Name(), "err", err)
		}
	}
}

// save writes the proposals changed, whole, into the store's records, durably, new ones
// at the end of its list, and keeps the newest MaxDecided decided ones and the forks of the
// newest MaxKeptRejected rejected ones: it removes the records of the proposals it drops,
// and rewrites those whose forks it drops (Dropped), each read whole from its record
// (records.go). It sets in changed what it changes of them. The store's lock is held.
func (m *Manager) save(storeID string, changed []Proposal) error {
	sp := m.of(storeID)
	whole := make(map[string]*Proposal, len(changed))
	for i := range changed {
		whole[changed[i].ID] = &changed[i]
	}
	seq := maps.Clone(sp.seq)
	if seq == nil {
		seq = map[string]int64{}
	}
	var next int64
	for _, s := range seq {
		next = max(next, s)
	}
	l := make([]Proposal, 0, len(sp.list)+len(changed))
	for _, p := range sp.list {
		if w, ok := whole[p.ID]; ok {
			p = *w
		}
		l = append(l, p)
	}
	for _, p := range changed {
		if _, ok := seq[p.ID]; !ok {
			next++
			seq[p.ID] = next
			l = append(l, p)
		}
	}
	decided, rejected := 0, 0
	kept := l[:0:0]
	var gone []string
	var write []Proposal // whole, newest first
	for i := len(l) - 1; i >= 0; i-- {
		p := l[i]
		if p.State != Open {
			if decided++; decided > MaxDecided {
				os.RemoveAll(m.data.Layout().ProposalFork(storeID, p.ID))
				gone = append(gone, p.ID)
				continue
			}
		}
		drop := false
		if (p.State == Rejected || p.State == Superseded) && !p.Dropped {
			if rejected++; rejected > MaxKeptRejected {
				if err := os.RemoveAll(m.data.Layout().ProposalFork(storeID, p.ID)); err != nil {
					return err
				}
				drop = true
			}
		}
		w, ok := whole[p.ID]
		if !ok && (drop || p.State != Open && p.Writing) {
			r, err := m.readRecord(storeID, p.ID)
			if err != nil {
				return err
			}
			w, ok = &r, true
		}
		if ok {
			w.Dropped = w.Dropped || drop
			if w.State != Open {
				w.Writing = false // its fork takes no more writes
			}
			write = append(write, *w)
			p = listed(*w)
		}
		kept = append(kept, p)
	}
	slices.Reverse(kept)
	if err := m.writeRecords(storeID, write, seq, gone); err != nil {
		// Some records may be written (a save of several): the list is read again from them
		// at its next use, so that what is kept here is what the disk holds.
		sp.list, sp.seq, sp.read = nil, nil, false
		return err
	}
	for _, id := range gone {
		delete(seq, id)
	}
	sp.list, sp.seq, sp.read = kept, seq, true
	return nil
}

// update changes proposal id of a store with fn, read whole from its record, and saves it;
// it returns the proposal whole. The store's lock is held.
func (m *Manager) update(storeID, id string, fn func(p *Proposal) error) (Proposal, error) {
	p, err := m.whole(storeID, id)
	if err != nil {
		return Proposal{}, err
	}
	if err := fn(&p); err != nil {
		return Proposal{}, err
	}
	p.UpdatedAt = time.Now().UTC()
	changed := []Proposal{p}
	if err := m.save(storeID, changed); err != nil {
		return Proposal{}, err
	}
	return changed[0], nil
}

// Filter selects proposals; zero fields do not filter.
type Filter struct {
	State State
	// Decided selects the decided proposals: every state but Open.
	Decided  bool
	AuthorID string
	// ReaderKeyID and ReaderProposes select what a caller with that key may read
	// (ReadableBy): with ReaderProposes, a propose key's own key's proposals only.
	ReaderKeyID    string
	ReaderProposes bool
}

// selects tells whether f selects p.
func (f Filter) selects(p Proposal) bool {
	return (f.State == "" || p.State == f.State) && (!f.Decided || p.State != Open) &&
		(f.AuthorID == "" || p.Author.ID == f.AuthorID) && p.ReadableBy(f.ReaderKeyID, f.ReaderProposes)
}

// Listed returns proposal id of the store as the list holds it (its last comment only, and
// CommentCount; UpdatedAt as the record has it), without reading its record: what a caller
// checks before a change (who may make it, the state), since the change reads the record
// itself, under the store's lock, and answers the proposal whole. Get reads the thread.
func (m *Manager) Listed(storeID, id string) (Proposal, error) {
	unlock, err := m.lock(storeID)
	if err != nil {
		return Proposal{}, err
	}
	defer unlock()
	return m.get(storeID, id)
}

// Get returns proposal id of the store, whole: with its thread, read from its record.
func (m *Manager) Get(storeID, id string) (Proposal, error) {
	unlock, err := m.lock(storeID)
	if err != nil {
		return Proposal{}, err
	}
	defer unlock()
	p, err := m.whole(storeID, id)
	return m.current(p), err
}

// current is p with UpdatedAt no earlier than the last write to its fork, for an answer.
// The writes to a fork are commits of its own store, not steps of the record, which a write
// does not save (a durable save per write would be dear): while the fork may hold writes
// that UpdatedAt misses (Writing), their time is read from the fork, opened if it is not.
// The store's lock is held.
func (m *Manager) current(p Proposal) Proposal {
	if !p.Writing || p.State != Open || m.closed.Load() {
		return p
	}
	f, err := m.fork(p)
	var t time.Time
	if err == nil {
		t, err = lastWrite(f, p.Base)
	}
	if err != nil {
		m.data.Logger().Warn("read the last write to a proposal's fork; answering the time now as its update", "store", p.StoreID, "proposal", p.ID, "err", err)
		t = time.Now().UTC() // every write to it came before
	}
	p.UpdatedAt = later(p.UpdatedAt, t)
	return p
}

// lastWrite is the time of fork f's newest version: its last write, as a fork holds none of
// main's since it opened. It is the zero time while f's main is still at base, where the
// fork started: f holds no write of its own, and its newest version is main's, whose date
// may be any (a pushed commit's).
func lastWrite(f *gitstore.Store, base string) (time.Time, error) {
	if base != "" && f.Head() == base {
		return time.Time{}, nil
	}
	page, err := f.Versions(context.Background(), gitstore.VersionFilter{Limit: 1})
	if err != nil || len(page.Versions) == 0 {
		return time.Time{}, err
	}
	return page.Versions[0].CreatedAt, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// get returns proposal id of the store, listed. The store's lock is held.
func (m *Manager) get(storeID, id string) (Proposal, error) {
	l, err := m.list(storeID)
	if err != nil {
		return Proposal{}, err
	}
	for _, p := range l {
		if p.ID == id {
			return p, nil
		}
	}
	return Proposal{}, notFound(storeID, id)
}

// whole returns proposal id of the store whole, with its thread: read from its record. The
// store's lock is held.
func (m *Manager) whole(storeID, id string) (Proposal, error) {
	if _, err := m.get(storeID, id); err != nil {
		return Proposal{}, err
	}
	return m.readRecord(storeID, id)
}

// sameAuthor tells whether an actor is a proposal's author, whose writes and pushes go to
// it: the same key, or the same session of the same key (a session id is the client's to
// choose, so it alone does not make an author). Who may read it is wider: ByKey.
func sameAuthor(a Actor, b gitstore.Actor) bool {
	return a.Type == b.Type && a.ID == b.ID && a.APIKeyID == b.APIKeyID
}

// openOf returns the open proposal of author in the store, if there is one. The store's
// lock is held.
func (m *Manager) openOf(storeID string, author gitstore.Actor) (Proposal, bool, error) {
	l, err := m.list(storeID)
	if err != nil {
		return Proposal{}, false, err
	}
	for i := len(l) - 1; i >= 0; i-- {
		if l[i].State == Open && l[i].Branch == "" && sameAuthor(l[i].Author, author) { // a pushed branch's is the branch's
			return l[i], true, nil
		}
	}
	return Proposal{}, false, nil
}

// fork returns the open fork of proposal p, opening it. An open proposal is marked Writing
// first, in its saved record: writes may reach the fork from then on. The store's lock is held.
func (m *Manager) fork(p Proposal) (*gitstore.Store, error) {
	sp := m.of(p.StoreID)
	if f, ok := sp.forks[p.ID]; ok {
		return f, nil
	}
	if m.closed.Load() {
		// Close has closed this store's forks, or will find none: one opened now would stay
		// open.
		return nil, gitstore.ErrStoreClosed
	}
	if err := m.markWriting(p.StoreID, p.ID); err != nil {
		return nil, err
	}
	f, err := m.data.OpenFork(p.StoreID, m.data.Layout().ProposalFork(p.StoreID, p.ID))
	if err != nil {
		return nil, fmt.Errorf("open proposal %s: %w", p.ID, err)
	}
	sp.forks[p.ID] = f
	return f, nil
}

// takeFork removes the open fork of proposal id of store storeID from those the manager
// holds, and returns it (nil if it is not open), for the caller to close. The store's lock
// is held.
func (m *Manager) takeFork(storeID, id string) *gitstore.Store {
	sp := m.of(storeID)
	f := sp.forks[id]
	delete(sp.forks, id)
	return f
}

// markWriting sets Writing on the open proposal id, unless it is set. A pushed branch's
// proposal is left alone: its fork changes by pushes, each of which updates the proposal.
// The store's lock is held.
func (m *Manager) markWriting(storeID, id string) error {
	l, err := m.list(storeID)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(l, func(p Proposal) bool { return p.ID == id })
	if i < 0 || l[i].Writing || l[i].State != Open || l[i].Branch != "" {
		return nil
	}
	p, err := m.readRecord(storeID, id)
	if err != nil {
		return err
	}
	p.Writing = true
	return m.save(storeID, []Proposal{p})
}

// Branches returns the branches of the store's repository (refs/heads/proposals/...) that
// hold open proposals: keyID's own, and other keys'. A propose key may neither fetch nor push
// other keys' with git, as it may not read another key's proposal through the API. A decided
// proposal's branch is main's history (approved) or gone (rejected).
func (m *Manager) Branches(storeID, keyID string) (own, others []string, err error) {
	unlock, err := m.lock(storeID)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	l, err := m.list(storeID)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range l {
		switch {
		case p.State != Open:
		case p.ByKey(keyID):
			own = append(own, branchOf(p))
		default:
			others = append(others, branchOf(p))
		}
	}
	return own, others, nil
}

// WritesTried returns the store that author's writes to store st go to: the fork of its open
// proposal, which is opened with title (or one that names the author) if it has none. The
// write was tried on st first (gitstore.Trial), on main's commit tried (TrialResult.Head; ""
// for none): a proposal that it opens starts from that commit if main moved since
// (gitstore.Store.ForkThen), so that the write meets on the fork the store that its trial
// saw, and is not refused there, or left with nothing to change, by what came to main in
// between (which would leave an open proposal of nothing).
func (m *Manager) WritesTried(ctx context.Context, st *gitstore.Store, author gitstore.Actor, title, tried string) (*gitstore.Store, Proposal, error) {
	unlock, err := m.lock(st.ID())
	if err != nil {
		return nil, Proposal{}, err
	}
	defer unlock()
	if p, ok, err := m.openOf(st.ID(), author); err != nil || ok {
		if err != nil {
			return nil, Proposal{}, err
		}
		f, err := m.fork(p)
		return f, p, err
	}
	if m.closed.Load() { // no proposal opens whose fork could not
		return nil, Proposal{}, gitstore.ErrStoreClosed
	}
	l, err := m.list(st.ID())
	if err != nil {
		return nil, Proposal{}, err
	}
	if err := m.roomFor(st.ID(), l, author, 1, sessionHint); err != nil {
		return nil, Proposal{}, err
	}
	now := time.Now().UTC()
	p := Proposal{ID: gitstore.NewID(Prefix, now), StoreID: st.ID(), Author: ActorOf(author), State: Open,
		CreatedAt: now, UpdatedAt: now, Comments: []Comment{}, Title: title, Writing: true} // its fork opens below
	if p.Title == "" {
		p.Title = "Changes by " + describe(author)
	}
	// The fork first, then the opening recorded in main, which the fork takes if main was
	// where the fork starts, so that approval can fast-forward: a fork that fails (a full
	// disk: it copies the store) leaves no opening recorded. If main moved since the trial,
	// the fork starts where the trial ran (tried).
	dir := m.data.Layout().ProposalFork(p.StoreID, p.ID)
	recorded := false // tried to: a refusal of the recording is not the fork's
	record := func(forked string) (string, error) {
		recorded = true
		before, step, err := st.RecordOpened(ctx, p.ID, p.Title, author)
		if err != nil || before != forked {
			return "", err
		}
		return step, nil
	}
	p.Base, err = st.ForkThen(ctx, dir, tried, record)
	if gitstore.IsKind(err, gitstore.KindConflict) && tried != "" && !recorded {
		// A redaction rewrote the history that the trial ran on (it holds the store's lock, but the
		// trial does not): the fork starts from main as it is.
		p.Base, err = st.ForkThen(ctx, dir, "", record)
	}
	if err != nil {
		return nil, Proposal{}, err
	}
	if err := m.save(st.ID(), []Proposal{p}); err != nil {
		os.RemoveAll(dir)
		return nil, Proposal{}, err
	}
	f, err := m.fork(p)
	return f, p, err
}

// Room refuses a write of author's to store storeID that would open a proposal, when the
// store or author's key has no room for another (the conflict that Writes would answer);
// nil if author has one open there. A write that would open one is tried on main first
// (gitstore.Trial), in the store's writer: checked before that, a key at its bound, which
// may send new sessions' writes without end, costs the writer nothing. Writes checks again.
func (m *Manager) Room(storeID string, author gitstore.Actor) error {
	unlock, err := m.lock(storeID)
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok, err := m.openOf(storeID, author); err != nil || ok {
		return err
	}
	l, err := m.list(storeID)
	if err != nil {
		return err
	}
	return m.roomFor(storeID, l, author, 1, sessionHint)
}

// Reads returns the store that author's reads of store st see: the fork of its open
// proposal (its own writes applied), or st if it has none.
func (m *Manager) Reads(st *gitstore.Store, author gitstore.Actor) (*gitstore.Store, error) {
	f, _, ok, err := m.Opened(st, author)
	if err != nil || !ok {
		return st, err
	}
	return f, nil
}

// Opened returns author's open proposal of store st and its fork, opened; ok is false if
// author has none open there.
func (m *Manager) Opened(st *gitstore.Store, author gitstore.Actor) (f *gitstore.Store, p Proposal, ok bool, err error) {
	unlock, err := m.lock(st.ID())
	if err != nil {
		return nil, Proposal{}, false, err
	}
	defer unlock()
	if p, ok, err = m.openOf(st.ID(), author); err != nil || !ok {
		return nil, Proposal{}, false, err
	}
	f, err = m.fork(p)
	return f, p, err == nil, err
}

// IsOpen tells whether proposal id of store storeID is open: a write to its fork that
// failed may have met its closing (Opened).
func (m *Manager) IsOpen(storeID, id string) bool {
	unlock, err := m.lock(storeID)
	if err != nil {
		return false
	}
	defer unlock()
	p, err := m.get(storeID, id)
	return err == nil && p.State == Open
}

// Session is what a session of author's tools works on in store st: the store it reads, and,
// while it has no open proposal, the opening of one (titled title) at its first change (nil
// once one is open: reads is its fork). A session that only reads so opens nothing to
// review.
func (m *Manager) Session(st *gitstore.Store, author gitstore.Actor, title string) (reads *gitstore.Store, opening *Opening, err error) {
	reads, err = m.Reads(st, author)
	if err != nil || reads != st {
		return reads, nil, err
	}
	return st, &Opening{m: m, st: st, author: author, title: title}, nil
}

// Opening opens a session's proposal of a store at the session's first change
// (Manager.Session).
type Opening struct {
	m      *Manager
	st     *gitstore.Store
	author gitstore.Actor
	title  string
}

// Room refuses, with the conflict that Open would answer, while no proposal could open (the
// bounds of open proposals).
func (o *Opening) Room() error { return o.m.Room(o.st.ID(), o.author) }

// Open opens the proposal, or finds it open, and returns its fork. tried is the commit that
// the trial of the change that opens it ran on (Manager.WritesTried).
func (o *Opening) Open(ctx context.Context, tried string) (*gitstore.Store, error) {
	f, _, err := o.m.WritesTried(ctx, o.st, o.author, o.title, tried)
	return f, err
}

// describe names an actor in a default title.
func describe(a gitstore.Actor) string {
	if a.Name != "" {
		return a.Name
	}
	return a.ID
}

// SetTitle renames an open proposal.
func (m *Manager) SetTitle(storeID, id, title string) (Proposal, error) {
	if err := checkText("title", title, MaxTitle, suspect.LineError); err != nil {
		return Proposal{}, err
	}
	unlock, err := m.lock(storeID)
	if err != nil {
		return Proposal{}, err
	}
	defer unlock()
	return m.update(storeID, id, func(p *Proposal) error {
		if p.State != Open {
			return &gitstore.Error{Kind: gitstore.KindConflict, Message: fmt.Sprintf("proposal %s is %s: its title stays", id, p.State)}
		}
		p.Title = title
		return nil
	})
}

// AddComment adds a comment to a proposal's thread.
func (m *Manager) AddComment(storeID, id string, by gitstore.Actor, body string) (Proposal, error) {
	if err := checkText("comment", body, MaxComment, suspect.TextError); err != nil {
		return Proposal{}, err
	}
	unlock, err := m.lock(storeID)
	if err != nil {
		return Proposal{}, err
	}
	defer unlock()
	return m.update(storeID, id, func(p *Proposal) error {
		if err := roomForComment(*p); err != nil {
			return err
		}
		p.Comments = append(p.Comments, Comment{Author: ActorOf(by), Body: body, CreatedAt: time.Now().UTC()})
		return nil
	})
}

// roomForComment refuses a comment on p, whose thread has MaxComments: p may be listed
// (CommentCount counts the thread all the same).
func roomForComment(p Proposal) error {
	if p.CommentCount() >= MaxComments {
		return &gitstore.Error{Kind: gitstore.KindInvalid, Message: fmt.Sprintf("proposal %s has %d comments, the most it may have", p.ID, MaxComments)}
	}
	return nil
}

// checkText checks a text that a client gives a proposal (the API, the UI and the CLI, through
// the server or on the data directory, all come here): not empty, at most max bytes of UTF-8,
// and no control character that controls refuses (suspect.LineError for a title, one line;
// suspect.TextError for a comment, whose line breaks and tabs are text). Bidirectional
// controls are kept (right-to-left writing uses them); the UI and the CLI show them escaped.
func checkText(what, s string, max int, controls func(what, s string) string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return &gitstore.Error{Kind: gitstore.KindInvalid, Message: what + " must not be empty"}
	case len(s) > max:
		return &gitstore.Error{Kind: gitstore.KindInvalid, Message: fmt.Sprintf("%s is %d bytes; the limit is %d", what, len(s), max)}
	case !utf8.ValidString(s):
		return &gitstore.Error{Kind: gitstore.KindInvalid, Message: what + " is not valid UTF-8"}
	}
	if msg := controls(what, s); msg != "" {
		return &gitstore.Error{Kind: gitstore.KindInvalid, Message: msg}
	}
	return nil
}

// FromBranch opens the proposal of a branch that author pushed with git to the store's
// repository (refs/heads/proposals/NAME), or, if that branch has an open proposal of the
// same author, makes the proposal the branch as it is now. Another author's push to the
// branch opens a proposal of its own: a push never changes someone else's proposal. The
// branch's commits are the proposal's changes.
func (m *Manager) FromBranch(ctx context.Context, st *gitstore.Store, ref string, author gitstore.Actor, title string) (Proposal, error) {
	unlock, err := m.lock(st.ID())
	if err != nil {
		return Proposal{}, err
	}
	defer unlock()
	l, err := m.list(st.ID())
	if err != nil {
		return Proposal{}, err
	}
	if p, ok := openBranch(l, ref, author); ok {
		if f := m.takeFork(st.ID(), p.ID); f != nil {
			if err := f.CloseFork(); err != nil {
				return Proposal{}, err
			}
		}
		base, err := st.ForkBranch(ctx, m.data.Layout().ProposalFork(st.ID(), p.ID), ref)
		if err != nil {
			return Proposal{}, err
		}
		return m.update(st.ID(), p.ID, func(p *Proposal) error {
			p.Base = base
			return nil
		})
	}
	if err := m.roomFor(st.ID(), l, author, 1, pushHint); err != nil {
		return Proposal{}, err
	}
	now := time.Now().UTC()
	p := Proposal{ID: gitstore.NewID(Prefix, now), StoreID: st.ID(), Author: ActorOf(author), State: Open,
		CreatedAt: now, UpdatedAt: now, Comments: []Comment{}, Title: title, Branch: ref}
	if err := st.RecordProposal(ctx, p.ID, "opened", p.Title, author); err != nil {
		return Proposal{}, err
	}
	dir := m.data.Layout().ProposalFork(st.ID(), p.ID)
	if p.Base, err = st.ForkBranch(ctx, dir, ref); err != nil {
		os.RemoveAll(dir)
		return Proposal{}, err
	}
	if err := m.save(st.ID(), []Proposal{p}); err != nil {
		os.RemoveAll(dir)
		return Proposal{}, err
	}
	return p, nil
}

// openBranch returns author's open proposal of the pushed branch ref in l, if any: a push
// to it updates that proposal rather than opening one.
func openBranch(l []Proposal, ref string, author gitstore.Actor) (Proposal, bool) {
	i := slices.IndexFunc(l, func(p Proposal) bool { return p.State == Open && p.Branch == ref && sameAuthor(p.Author, author) })
	if i < 0 {
		return Proposal{}, false
	}
	return l[i], true
}

// What a key at its bound of open proposals can do, besides having some decided.
const (
	sessionHint = "write in a session that has one open (the same x-gitmem-session-id), or ask"
	pushHint    = "push to a branch whose proposal is open, or ask"
)

// RoomForBranches refuses a push of author that would open more proposals with branches refs
// than the store and author's key have room for (a branch that already holds an open
// proposal of author only updates it): checked before git creates the branches, so that a
// push past the bounds leaves none behind. Pushes at once may pass it together; the
// proposals then open as far as there is room, and the push's answer does not say which.
func (m *Manager) RoomForBranches(storeID string, author gitstore.Actor, refs []string) error {
	unlock, err := m.lock(storeID)
	if err != nil {
		return err
	}
	defer unlock()
	l, err := m.list(storeID)
	if err != nil {
		return err
	}
	n := 0
	for _, ref := range refs {
		if _, ok := openBranch(l, ref, author); !ok {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return m.roomFor(storeID, l, author, n, pushHint)
}

// roomFor refuses n new proposals of author in a store that would have more than
// m.limits.Open open ones, or in which author's key would have more than m.limits.OpenPerKey
// (l is the store's list). An actor without a key (the local user of a server without keys)
// has the store's bound only.
func (m *Manager) roomFor(storeID string, l []Proposal, author gitstore.Actor, n int, hint string) error {
	open, mine := 0, 0
	key := author.KeyID()
	for _, p := range l {
		if p.State == Open {
			open++
			if p.ByKey(key) {
				mine++
			}
		}
	}
	more := ""
	if n > 1 {
		more = fmt.Sprintf(" and this would open %d more", n)
	}
	if key != "" && mine+n > m.limits.OpenPerKey {
		return &gitstore.Error{Kind: gitstore.KindConflict, Message: fmt.Sprintf("key %s has %s in memory store %s%s; %d is the most one key may have (the server's --max-open-proposals-per-key): "+
			"%s a reviewer to approve or reject some first (gitmem proposals list %s --state open)", key, english.Count(mine, "open proposal"), storeID, more, m.limits.OpenPerKey, hint, storeID)}
	}
	if open+n > m.limits.Open {
		return &gitstore.Error{Kind: gitstore.KindConflict, Message: fmt.Sprintf("memory store %s has %s%s; %d is the most it may have (the server's --max-open-proposals): approve or reject some first", storeID, english.Count(open, "open proposal"), more, m.limits.Open)}
	}
	return nil
}
