package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/proposals"
)

// Proposals (gitmem extension): a key with access propose reads and writes memories as any
// key does, but its writes go to its proposal of the store (one open proposal per key, or per
// session with the session header), and its reads see that proposal applied. People review
// them:
//
//	GET    /v1/memory_stores/{id}/proposals?state=&author_id=&limit=&page=   newest first, paged
//	GET    /v1/memory_stores/{id}/proposals/{prop}               with its changes against main
//	PATCH  /v1/memory_stores/{id}/proposals/{prop}               {title}
//	POST   /v1/memory_stores/{id}/proposals/{prop}/approve       {allow_conflicts?, paths?}
//	POST   /v1/memory_stores/{id}/proposals/{prop}/reject        {comment?}
//	POST   /v1/memory_stores/{id}/proposals/{prop}/comments      {body}
//
// Every key that may read the store may list, read and comment (a propose key on its own
// proposals); approving, rejecting and renaming need a read_write key (the proposer may
// rename its own).

func (s *Server) proposalRoutes(g *echo.Group) {
	g.GET("/memory_stores/:store/proposals", s.listProposals)
	g.GET("/memory_stores/:store/proposals/:prop", s.getProposal)
	g.PATCH("/memory_stores/:store/proposals/:prop", s.renameProposal)
	g.POST("/memory_stores/:store/proposals/:prop/approve", s.approveProposal)
	g.POST("/memory_stores/:store/proposals/:prop/reject", s.rejectProposal)
	g.POST("/memory_stores/:store/proposals/:prop/comments", s.commentProposal)
}

// Proposals is the server's proposals, for the review UI.
func (s *Server) Proposals() *proposals.Manager { return s.props }

// Close closes what the server opened itself: the forks of open proposals, unless the
// proposals were given in Options.
func (s *Server) Close() error {
	if s.ownsProps {
		return s.props.Close()
	}
	return nil
}

// memStore is store for the routes that read memories, their versions and history, and
// for the tools: a propose key's reads see its open proposal applied. A write takes the
// store from writeStore and goes through memWrite.
func (s *Server) memStore(c echo.Context) (*gitstore.Store, caller, error) {
	st, cl, err := s.store(c, false)
	if err != nil || !cl.proposes() {
		return st, cl, err
	}
	f, err := s.props.Reads(st, cl.actor)
	return f, cl, err
}

// writeStore is store for a memory write, which memWrite then makes: the store itself, for
// a propose key too (its write goes to its proposal of the store).
func (s *Server) writeStore(c echo.Context) (*gitstore.Store, caller, error) {
	return s.store(c, !callerOf(c).proposes())
}

// memWrite makes write, one memory write of the caller's, on the store it goes to, and
// returns that store: st itself, or the caller's proposal of st for a propose key or for a
// write that st's review policy refuses. That proposal opens, if it is not open yet, only
// for a write that would succeed and change something: the write is tried on st first
// (gitstore.Trial), so that a refused write opens nothing for a person to review, and the
// proposal starts from the commit the trial ran on, so that the write meets the store that
// the trial saw; and only if there is room for it (the bounds of open proposals), checked
// before the trial.
func (s *Server) memWrite(c echo.Context, st *gitstore.Store, cl caller, write func(context.Context, *gitstore.Store) error) (*gitstore.Store, error) {
	ctx := c.Request().Context()
	if !cl.proposes() {
		if err := write(ctx, st); gitstore.ErrorRule(err) != gitstore.RuleReview {
			return st, err
		}
	}
	for attempt := 0; ; attempt++ {
		f, p, open, err := s.props.Opened(st, cl.actor)
		if err != nil {
			return nil, err
		}
		if open {
			if beforeProposalWrite != nil {
				beforeProposalWrite()
			}
			err := write(ctx, f)
			if err != nil && attempt == 0 && !s.props.IsOpen(st.ID(), p.ID) {
				// The proposal closed (approved, rejected) since it was looked up, and its
				// fork with it: the write goes as if none were open, tried first, so that a
				// refused write opens no proposal of nothing.
				continue
			}
			nameProposal(c, p.ID, cl.proposes()) // as memStore: only a proposer's reads see its proposal
			return f, err
		}
		if err := s.props.Room(st.ID(), cl.actor); err != nil {
			return nil, err // before the trial: a key at its bound costs the writer nothing
		}
		var tried gitstore.TrialResult
		if err := write(gitstore.Trial(ctx, &tried), st); err != nil || !tried.Changes {
			return st, err
		}
		if afterTrial != nil {
			afterTrial()
		}
		// The proposal, if it opens now, starts where the trial ran (tried.Head); if another
		// request of the caller's opened one meanwhile, the write goes there.
		f, p, err = s.props.WritesTried(ctx, st, cl.actor, proposalTitle(cl), tried.Head)
		if err != nil {
			return nil, err
		}
		nameProposal(c, p.ID, cl.proposes())
		return f, write(ctx, f)
	}
}

// afterTrial, set by tests only, runs in memWrite between a passing trial and the opening
// of the proposal: a change to main there is what a concurrent writer's would be.
var afterTrial func()

// beforeProposalWrite, set by tests only, runs in memWrite between the lookup of the caller's
// open proposal and the write to it: a review there is what a concurrent one would be.
var beforeProposalWrite func()

// proposalTitle is the title of a proposal that a caller's first write opens.
func proposalTitle(cl caller) string {
	key := "no key"
	if cl.key != nil {
		key = fmt.Sprintf("key %q", cl.key.Name)
	}
	if sid := cl.actor.SessionID(); sid != "" {
		return fmt.Sprintf("Changes by session %s (%s)", sid, key)
	}
	return "Changes by " + key
}

// ProposalHeader names, on the answer to a write that went to a proposal (a propose key's,
// or one whose path the store reviews), the proposal it went to.
const ProposalHeader = "x-gitmem-proposal"

// ProposalReadsHeader, beside ProposalHeader, says whether the caller's reads see the
// proposal ("true": a propose key's reads are its proposal applied) or main ("false": a
// write that the review policy sent to the caller's proposal). A client that would read the
// version it just made (the Go client's writes do) so knows not to ask where the answer can
// only be a 404.
const ProposalReadsHeader = "x-gitmem-proposal-reads"

// nameProposal names proposal id in the answer, if the write succeeds (a refused write went
// nowhere), and whether the caller's reads see it.
func nameProposal(c echo.Context, id string, reads bool) {
	res := c.Response()
	res.Before(func() {
		if res.Status < 300 {
			res.Header().Set(ProposalHeader, id)
			res.Header().Set(ProposalReadsHeader, strconv.FormatBool(reads))
		}
	})
}

// memView is memStore, plus the request's view parameter (basic or full, else def).
func (s *Server) memView(c echo.Context, def string) (*gitstore.Store, caller, bool, error) {
	full, err := view(c, def)
	if err != nil {
		return nil, caller{}, false, err
	}
	st, cl, err := s.memStore(c)
	return st, cl, full, err
}

type commentJSON struct {
	Author    actorJSON `json:"author"`
	Body      string    `json:"body"`
	CreatedAt string    `json:"created_at"`
}

type proposalJSON struct {
	Type          string                `json:"type"`
	ID            string                `json:"id"`
	MemoryStoreID string                `json:"memory_store_id"`
	Title         string                `json:"title"`
	Author        actorJSON             `json:"author"`
	State         proposals.State       `json:"state"`
	Base          string                `json:"base"`
	CreatedAt     string                `json:"created_at"`
	UpdatedAt     string                `json:"updated_at"`
	DecidedBy     actorJSON             `json:"decided_by"`
	DecidedAt     *string               `json:"decided_at"`
	Merge         *string               `json:"merge"`
	CommentCount  int                   `json:"comment_count"`
	Comments      []commentJSON         `json:"comments"` // the thread; in a list, its last listedComments
	Changes       *[]proposals.Change   `json:"changes,omitempty"`
	MergeResult   *gitstore.MergeResult `json:"merge_result,omitempty"`
}

// ProposalObject is a proposal as the API shows it, with its changes and the result of its
// approval when given: for the CLI's output of a data directory's proposals.
func ProposalObject(p proposals.Proposal, changes *[]proposals.Change, merge *gitstore.MergeResult) any {
	out := toProposal(p)
	out.Changes, out.MergeResult = changes, merge
	return out
}

func toProposal(p proposals.Proposal) proposalJSON { return proposalWith(p, len(p.Comments)) }

// proposalWith is p as the API shows it with the last n comments of its thread, and the
// thread's length in comment_count.
func proposalWith(p proposals.Proposal, n int) proposalJSON {
	out := proposalJSON{Type: "memory_proposal", ID: p.ID, MemoryStoreID: p.StoreID, Title: p.Title,
		Author: toActor(p.Author.Store()), State: p.State, Base: p.Base, CreatedAt: wireTime(p.CreatedAt),
		UpdatedAt: wireTime(p.UpdatedAt), DecidedAt: wireTimePtr(p.DecidedAt), CommentCount: p.CommentCount(), Comments: []commentJSON{}}
	if p.Author.APIKeyID != "" {
		out.Author["api_key_id"] = p.Author.APIKeyID // a session's key: the session id alone is the client's to choose
	}
	if p.DecidedBy != nil {
		out.DecidedBy = toActor(p.DecidedBy.Store())
	}
	if p.Merge != "" {
		out.Merge = &p.Merge
	}
	for _, c := range p.Comments[max(0, len(p.Comments)-n):] {
		out.Comments = append(out.Comments, commentJSON{Author: toActor(c.Author.Store()), Body: c.Body, CreatedAt: wireTime(c.CreatedAt)})
	}
	return out
}

// listedComments is how many comments, the last ones, a proposal of a list holds (with
// comment_count, the thread's length): a page of MaxPageSize proposals holds at most that many
// of MaxComment bytes each, where whole threads would be MaxComments times as many (40 MB a
// page of 100 at the bounds). The whole thread is GET .../proposals/{prop}'s. A listed
// proposal (proposals.Manager.Page) holds no more than these.
const listedComments = proposals.ListedComments

// ProposalPage is a page of proposals as the list route answers it: for the CLI's output of
// a data directory's proposals.
func ProposalPage(pg proposals.Page) any {
	data := make([]proposalJSON, len(pg.Proposals))
	for i, p := range pg.Proposals {
		data[i] = proposalWith(p, listedComments)
	}
	return page(data, pg.NextCursor)
}

func (s *Server) listProposals(c echo.Context) error {
	st, cl, err := s.store(c, false)
	if err != nil {
		return err
	}
	opts := proposals.PageOptions{Filter: proposals.Filter{State: proposals.State(c.QueryParam("state")), AuthorID: c.QueryParam("author_id"),
		ReaderKeyID: cl.actor.KeyID(), ReaderProposes: cl.proposes()}, Cursor: c.QueryParam("page")} // a proposer sees its own key's proposals only (readable)
	switch opts.State {
	case "", proposals.Open, proposals.Approved, proposals.Rejected, proposals.Superseded:
	default:
		return badRequest("state %q must be open, approved, rejected or superseded", opts.State)
	}
	if opts.Limit, err = limit(c, false); err != nil {
		return err
	}
	pg, err := s.props.Page(st.ID(), opts)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ProposalPage(pg))
}

// proposal is the store and the proposal a request names, as the list holds it
// (proposals.Manager.Listed): enough for the checks before a change, which reads the
// proposal's record itself and answers it whole, so that its thread (up to 410 KB) is read
// once a change. A read asks for the thread (Get) once its checks pass.
func (s *Server) proposal(c echo.Context, write bool) (*gitstore.Store, caller, proposals.Proposal, error) {
	st, cl, err := s.store(c, write)
	if err != nil {
		return nil, cl, proposals.Proposal{}, err
	}
	p, err := s.props.Listed(st.ID(), c.Param("prop"))
	return st, cl, p, err
}

// readable tells whether the caller may read and discuss the proposal
// (proposals.Proposal.ReadableBy).
func readable(cl caller, p proposals.Proposal) bool {
	return p.ReadableBy(cl.actor.KeyID(), cl.proposes())
}

func (s *Server) getProposal(c echo.Context) error {
	st, cl, p, err := s.proposal(c, false)
	if err != nil {
		return err
	}
	if !readable(cl, p) {
		return forbidden("this API key (%s) may only read its own proposals", cl.key.ID)
	}
	if p, err = s.props.Get(st.ID(), p.ID); err != nil {
		return err
	}
	out := toProposal(p)
	if p.State != proposals.Approved && !p.Dropped {
		changes, err := s.props.Diff(c.Request().Context(), st, p.ID)
		if err != nil {
			return err
		}
		out.Changes = &changes
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) renameProposal(c echo.Context) error {
	cl := callerOf(c)
	st, _, p, err := s.proposal(c, !cl.proposes())
	if err != nil {
		return err
	}
	if !readable(cl, p) {
		return forbidden("this API key (%s) may only rename its own proposals", cl.key.ID)
	}
	b, err := readBody(c, "title")
	if err != nil {
		return err
	}
	title, err := b.requiredStr("title")
	if err != nil {
		return err
	}
	if p, err = s.props.SetTitle(st.ID(), p.ID, title); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toProposal(p))
}

func (s *Server) approveProposal(c echo.Context) error {
	st, cl, p, err := s.proposal(c, true)
	if err != nil {
		return err
	}
	b, err := readBody(c, "allow_conflicts", "paths")
	if err != nil {
		return err
	}
	var opts proposals.ApproveOptions
	if b.has("allow_conflicts") {
		if err := b.decode("allow_conflicts", &opts.AllowConflicts, "true or false"); err != nil {
			return err
		}
	}
	if b.has("paths") {
		if err := b.decode("paths", &opts.Paths, "an array of memory paths"); err != nil {
			return err
		}
		if len(opts.Paths) == 0 {
			return badRequest("paths must name at least one memory path; leave it out to approve the whole proposal")
		}
	}
	p, res, err := s.props.Approve(c.Request().Context(), st, p.ID, cl.actor, opts)
	var ce *proposals.ConflictError
	if errors.As(err, &ce) {
		return c.JSON(http.StatusConflict, map[string]any{"type": "error", "error": map[string]any{
			"type": "conflict_error", "message": ce.Error(), "conflicts": ce.Conflicts}, "request_id": requestID(c)})
	}
	if err != nil {
		return err
	}
	out := toProposal(p)
	out.MergeResult = &res
	return c.JSON(http.StatusOK, out)
}

func (s *Server) rejectProposal(c echo.Context) error {
	st, cl, p, err := s.proposal(c, true)
	if err != nil {
		return err
	}
	b, err := readBody(c, "comment")
	if err != nil {
		return err
	}
	comment, err := b.str("comment")
	if err != nil {
		return err
	}
	if p.State != proposals.Open {
		return &apiError{status: http.StatusConflict, typ: "conflict_error", message: fmt.Sprintf("proposal %s is %s already", p.ID, p.State)}
	}
	if comment != nil {
		p, err = s.props.RejectWithComment(c.Request().Context(), st, p.ID, cl.actor, *comment)
	} else {
		p, err = s.props.Reject(c.Request().Context(), st, p.ID, cl.actor)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toProposal(p))
}

func (s *Server) commentProposal(c echo.Context) error {
	cl := callerOf(c)
	st, _, p, err := s.proposal(c, !cl.proposes())
	if err != nil {
		return err
	}
	if !readable(cl, p) {
		return forbidden("this API key (%s) may only comment on its own proposals", cl.key.ID)
	}
	b, err := readBody(c, "body")
	if err != nil {
		return err
	}
	body, err := b.requiredStr("body")
	if err != nil {
		return err
	}
	if p, err = s.props.AddComment(st.ID(), p.ID, cl.actor, body); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, toProposal(p))
}
