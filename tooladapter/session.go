// Package tooladapter gives agents their tools over gitmem's stores: the Claude memory tool
// (memory_20250818, under /memories) and the seven agent tools memory_list, memory_search,
// memory_read, memory_write, memory_edit, memory_delete and memory_changes.
//
// A Session binds the tools to up to MaxStores stores, each read-write or read-only, and to
// the actor that its writes are recorded as. With one store, /memories is that store's root;
// with several, each store is a folder /memories/<slug>/. Every tool answers a Result, the
// text that goes back to the model as a tool_result; a tool that fails answers its error as
// "Error: <message>" with IsError set, as the official SDKs' tool runners do.
package tooladapter

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/search"
)

// Limits of a session, as the memory store documentation gives them.
const (
	MaxStores      = 8
	MaxPromptChars = 4096
)

// SessionPrefix starts every session id.
const SessionPrefix = "sesn_"

// Access is what a session may do with an attached store.
type Access string

// The access modes of an attachment.
const (
	ReadWrite Access = "read_write"
	ReadOnly  Access = "read_only"
	// Propose: the session's writes are proposed for review (package proposals). The
	// attachment's store is the fork of the session's proposal, or main with
	// Attachment.Proposal to open one at the first change; the tools use it as
	// read_write, and the system prompt says that changes wait for review.
	Propose Access = "propose"
)

// Attachment attaches one store to a session.
type Attachment struct {
	Store  *gitstore.Store
	Access Access // ReadWrite if empty
	// Prompt tells the model what the store is for in this session (at most 4,096
	// characters); it goes into the system prompt with the store's name and description.
	Prompt string
	// Proposal, with Access Propose, opens the session's proposal of Store at the session's
	// first change; the session reads and changes the proposal's fork from then on, and
	// until then it reads Store. A session that only reads so opens no proposal for a
	// person to review. Without it, Store is the fork already.
	Proposal ProposalOpener
}

// ProposalOpener opens a session's proposal of a store (proposals.Opening is one).
type ProposalOpener interface {
	// Room refuses (a KindConflict error) while no proposal could open, past the bounds of
	// open proposals: a change is then refused before it is tried.
	Room() error
	// Open opens the proposal and returns its fork. tried is main's commit that the trial
	// of the change that opens it ran on (gitstore.TrialResult.Head): the proposal starts
	// from it if main moved since, so that the change meets the store that the trial saw.
	Open(ctx context.Context, tried string) (*gitstore.Store, error)
}

// Options create a Session.
type Options struct {
	// ID is the session's id (sesn_…); a new one is made if empty.
	ID string
	// APIKeyID is the key that the session's caller authenticated with, if any; versions
	// written by the session then also match that key.
	APIKeyID string
	// Actor, if set, records writes as this actor instead of the session (the HTTP tool
	// route without a session header writes as its API key, as the rest of the API does).
	Actor *gitstore.Actor
	// Stores are the attached stores, 1 to MaxStores.
	Stores []Attachment
	// Search answers memory_search; without it, memory_search says that search is off.
	Search *search.Service
	// At, if set, binds the tools to the stores as they were at that time (RFC 3339) or
	// commit, read-only: the views and reads of a session that looks back.
	At string
	// Stop, when closed, ends the waits of memory_changes calls (a server that shuts down
	// answers them with what it has rather than holding its shutdown).
	Stop <-chan struct{}
}

// mount is an attached store as the tools see it.
type mount struct {
	attached *gitstore.Store
	// attachedReads is attached, or its snapshot for a session with Options.At.
	attachedReads gitstore.MemoryReader
	proposal      *lazyProposal // Attachment.Proposal, nil without it
	at            string        // Options.At, for messages
	info          gitstore.StoreInfo
	slug          string // the folder below /memories, "" when it is the only store
	access        Access
	prompt        string
}

// lazyProposal opens a session's proposal at its first change, once.
type lazyProposal struct {
	mu     sync.Mutex
	opener ProposalOpener
	fork   atomic.Pointer[gitstore.Store] // set once open
}

// store is the store that the session reads and changes: the attached one, or the fork of
// its proposal once that opened.
func (m *mount) store() *gitstore.Store {
	if f := m.fork(); f != nil {
		return f
	}
	return m.attached
}

// reads is what the session reads of the store (see store).
func (m *mount) reads() gitstore.MemoryReader {
	if f := m.fork(); f != nil {
		return f
	}
	return m.attachedReads
}

func (m *mount) fork() *gitstore.Store {
	if m.proposal == nil {
		return nil
	}
	return m.proposal.fork.Load()
}

// Session is the tools bound to a set of stores. Its methods are safe for concurrent use.
type Session struct {
	id     string
	actor  gitstore.Actor
	mounts []mount
	search *search.Service
	stop   <-chan struct{}
}

// NewSession checks the attachments and binds the tools to them.
func NewSession(ctx context.Context, opts Options) (*Session, error) {
	if len(opts.Stores) == 0 {
		return nil, invalidf("a session needs at least one memory store")
	}
	if len(opts.Stores) > MaxStores {
		return nil, invalidf("a session can attach at most %d memory stores, got %d", MaxStores, len(opts.Stores))
	}
	id := opts.ID
	if id == "" {
		id = gitstore.NewID(SessionPrefix, time.Now())
	} else if !strings.HasPrefix(id, SessionPrefix) || len(id) == len(SessionPrefix) {
		return nil, invalidf("session id %q must start with %s", id, SessionPrefix)
	}
	s := &Session{id: id, search: opts.Search, stop: opts.Stop,
		actor: gitstore.Actor{Type: gitstore.SessionActor, ID: id, APIKeyID: opts.APIKeyID}}
	if opts.Actor != nil {
		s.actor = *opts.Actor
	}
	seen := map[string]bool{}
	for _, a := range opts.Stores {
		if a.Store == nil {
			return nil, invalidf("a store attachment has no store")
		}
		switch a.Access {
		case "":
			a.Access = ReadWrite
		case ReadWrite, ReadOnly, Propose:
		default:
			return nil, invalidf("access %q of memory store %s is unknown; use read_write, read_only or propose", a.Access, a.Store.ID())
		}
		if n := utf8.RuneCountInString(a.Prompt); n > MaxPromptChars {
			return nil, invalidf("the prompt for memory store %s is %d characters; the limit is %d", a.Store.ID(), n, MaxPromptChars)
		}
		if seen[a.Store.ID()] {
			return nil, invalidf("memory store %s is attached twice", a.Store.ID())
		}
		seen[a.Store.ID()] = true
		info, err := a.Store.Info(ctx)
		if err != nil {
			return nil, err
		}
		reads, err := a.Store.ReaderAt(ctx, opts.At)
		if err != nil {
			return nil, err
		}
		m := mount{attached: a.Store, attachedReads: reads, info: info, access: a.Access, prompt: a.Prompt}
		if opts.At != "" {
			m.at, m.access = opts.At, ReadOnly
		}
		if m.access == Propose && a.Proposal != nil {
			m.proposal = &lazyProposal{opener: a.Proposal}
		}
		s.mounts = append(s.mounts, m)
	}
	infos := make([]gitstore.StoreInfo, len(s.mounts))
	for i, m := range s.mounts {
		infos[i] = m.info
	}
	for i, slug := range slugs(infos) {
		s.mounts[i].slug = slug
	}
	return s, nil
}

// slugs are the folders below /memories of stores attached in this order: none for one
// store, else each store's Slug.
func slugs(infos []gitstore.StoreInfo) []string {
	out := make([]string, len(infos))
	if len(infos) < 2 {
		return out
	}
	seen := map[string]bool{}
	for i, info := range infos {
		out[i] = Slug(info.Name)
		if seen[out[i]] {
			// Two names of the same slug: the later one's folder also says its id.
			out[i] += "-" + strings.ToLower(strings.TrimPrefix(info.ID, gitstore.StorePrefix))
		}
		seen[out[i]] = true
	}
	return out
}

// MountPaths returns where a session that attaches these stores, in this order, sees each
// of them: /memories for one store, /memories/<slug> for several. For a client whose tools
// run elsewhere (a server's /mcp), to say so as a local session's MountPath does.
func MountPaths(infos []gitstore.StoreInfo) []string {
	out := slugs(infos)
	for i, slug := range out {
		out[i] = mount{slug: slug}.root()
	}
	return out
}

// ID returns the session's id.
func (s *Session) ID() string { return s.id }

var slugRuns = regexp.MustCompile(`[^\p{L}\p{N}]+`)

// Slug turns a store's name into its folder below /memories: lower case, with each run of
// characters other than letters and digits made one "-". A name with no letters or digits
// becomes "store".
func Slug(name string) string {
	s := strings.Trim(slugRuns.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if s == "" {
		return "store"
	}
	return s
}

// MountPath returns where a store of the session is seen: /memories, or /memories/<slug>.
func (s *Session) MountPath(storeID string) (string, bool) {
	for _, m := range s.mounts {
		if m.attached.ID() == storeID {
			return m.root(), true
		}
	}
	return "", false
}

func (m mount) root() string {
	if m.slug == "" {
		return memoriesRoot
	}
	return memoriesRoot + "/" + m.slug
}

// change makes change, a change of the session's (shown is the path as the model gave
// it), on the store that it goes to, and refuses a change to a store that the session may
// only read. A proposal that opens at the session's first change (Attachment.Proposal)
// opens here, and only for a change that would succeed and change something: change is
// tried first on the store that the session reads (gitstore.Trial), and a refused change,
// or one that leaves the store as it is, opens nothing to review. change may so run twice;
// what it keeps of the second run is the answer.
func (m *mount) change(ctx context.Context, shown string, change func(context.Context, *gitstore.Store) error) error {
	switch {
	case m.at != "":
		return toolErrorf("%s cannot be changed: this session reads the memory store %q as it was at %s", shown, m.info.Name, m.at)
	case m.access == ReadOnly:
		return toolErrorf("%s is in the memory store %q, which this session may read but not change", shown, m.info.Name)
	case m.proposal == nil:
		return change(ctx, m.attached)
	}
	p := m.proposal
	if f := p.fork.Load(); f != nil {
		return change(ctx, f)
	}
	noRoom := func(err error) error {
		if gitstore.IsKind(err, gitstore.KindConflict) {
			// No room for another open proposal: the session still reads.
			return toolErrorf("%s cannot be changed now: this session proposes its changes to the memory store %q, and a proposal for them cannot open: %s",
				shown, m.info.Name, storeMessage(err))
		}
		return err
	}
	if err := p.opener.Room(); err != nil {
		return noRoom(err) // before the trial, which takes the store's writer
	}
	var tried gitstore.TrialResult
	if err := change(gitstore.Trial(ctx, &tried), m.attached); err != nil || !tried.Changes {
		return err
	}
	f, err := p.openOnce(ctx, tried.Head)
	if err != nil {
		return noRoom(err)
	}
	return change(ctx, f)
}

// openOnce opens the proposal (from tried: ProposalOpener.Open), or returns it if it is open.
func (p *lazyProposal) openOnce(ctx context.Context, tried string) (*gitstore.Store, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f := p.fork.Load(); f != nil {
		return f, nil
	}
	f, err := p.opener.Open(ctx, tried)
	if err != nil {
		return nil, err
	}
	p.fork.Store(f)
	return f, nil
}

// toolError is an error that the model caused and should read: its message goes back as
// the tool result. Other errors are internal and are not shown verbatim.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func toolErrorf(format string, args ...any) error {
	return &toolError{msg: fmt.Sprintf(format, args...)}
}

func invalidf(format string, args ...any) error {
	return &gitstore.Error{Kind: gitstore.KindInvalid, Message: fmt.Sprintf(format, args...)}
}
