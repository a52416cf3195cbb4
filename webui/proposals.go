package webui

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/proposals"
)

// The review queue: the store's proposals (what agents with a propose key, or sessions that
// attach the store to propose, wrote for review), each with its changes against main as one
// diff across memories, and the forms that decide it with the same operations as the API.

type proposalsPage struct {
	Open, Decided []proposals.Proposal
	// OpenAt and DecidedAt are the cursors the sections start at ("" the first page), and
	// NextOpen and NextDecided those of their next pages ("" none).
	OpenAt, DecidedAt, NextOpen, NextDecided string
	Off                                      bool // the UI was built without proposals
}

// proposalsPageSize is how many proposals each section of the queue shows at once; "More"
// shows the next ones.
const proposalsPageSize = proposals.MaxPageSize

type changeView struct {
	proposals.Change
	Lines []unifiedLine
}

type proposalPage struct {
	Proposal  proposals.Proposal
	Changes   []changeView
	Conflicts []string // paths, when an approval was refused
	Gone      bool     // approved: its changes are main's versions
}

func (u *UI) proposalsQueue(w http.ResponseWriter, r *http.Request, q *request) error {
	qs := r.URL.Query()
	page := proposalsPage{OpenAt: qs.Get("open"), DecidedAt: qs.Get("decided")}
	if u.opts.Proposals == nil {
		page.Off = true
	} else {
		open, decided := readerFilter(q), readerFilter(q)
		open.State, decided.Decided = proposals.Open, true
		p, err := u.opts.Proposals.Page(q.storeID, proposals.PageOptions{Filter: open, Limit: proposalsPageSize, Cursor: page.OpenAt})
		if err != nil {
			return err
		}
		page.Open, page.NextOpen = p.Proposals, p.NextCursor
		if p, err = u.opts.Proposals.Page(q.storeID, proposals.PageOptions{Filter: decided, Limit: proposalsPageSize, Cursor: page.DecidedAt}); err != nil {
			return err
		}
		page.Decided, page.NextDecided = p.Proposals, p.NextCursor
	}
	u.render(w, r, q, http.StatusOK, "proposals", page)
	return nil
}

// proposalOf is the proposal the request names, as the list holds it
// (proposals.Manager.Listed): enough for the checks before a change, which reads the
// proposal's record itself, so that its thread is read once a change. A page that shows the
// thread asks for it (Get).
func (u *UI) proposalOf(r *http.Request, q *request) (proposals.Proposal, error) {
	if u.opts.Proposals == nil {
		return proposals.Proposal{}, notFound("this server keeps no proposals")
	}
	p, err := u.opts.Proposals.Listed(q.storeID, r.PathValue("prop"))
	if err == nil && !mayRead(q, p) {
		return proposals.Proposal{}, forbidden("this API key (" + q.caller.Key.ID + ") may only read its own proposals")
	}
	return p, err
}

// readerFilter selects the proposals that the caller may see, by the API's rule
// (proposals.Proposal.ReadableBy): a proposer sees its own key's only.
func readerFilter(q *request) proposals.Filter {
	var f proposals.Filter
	if k := q.caller.Key; k != nil {
		f.ReaderKeyID, f.ReaderProposes = k.ID, k.Access == apikeys.Propose
	}
	return f
}

// mayRead tells whether the caller may see proposal p (readerFilter).
func mayRead(q *request, p proposals.Proposal) bool {
	f := readerFilter(q)
	return p.ReadableBy(f.ReaderKeyID, f.ReaderProposes)
}

func (u *UI) proposal(w http.ResponseWriter, r *http.Request, q *request) error {
	p, err := u.proposalOf(r, q)
	if err != nil {
		return err
	}
	return u.showProposal(w, r, q, p.ID, http.StatusOK, nil)
}

// showProposal shows proposal id, whose checks passed (proposalOf), with its thread.
func (u *UI) showProposal(w http.ResponseWriter, r *http.Request, q *request, id string, status int, conflicts []string) error {
	p, err := u.opts.Proposals.Get(q.storeID, id)
	if err != nil {
		return err
	}
	page := proposalPage{Proposal: p, Conflicts: conflicts, Gone: p.State == proposals.Approved || p.Dropped}
	if !page.Gone {
		changes, err := u.opts.Proposals.Diff(r.Context(), q.store, p.ID)
		if err != nil {
			return err
		}
		for _, c := range changes {
			page.Changes = append(page.Changes, changeView{Change: c, Lines: unifiedLines(c.Diff)})
		}
	}
	u.render(w, r, q, status, "proposal", page)
	return nil
}

func (u *UI) approveProposal(w http.ResponseWriter, r *http.Request, q *request) error {
	p, err := u.proposalOf(r, q)
	if err != nil {
		return err
	}
	opts := proposals.ApproveOptions{AllowConflicts: r.PostFormValue("allow_conflicts") == "on"}
	// The page sends the checked changes' paths and how many it showed: fewer checked is
	// "approve some".
	if total, _ := strconv.Atoi(r.PostFormValue("total")); total > 0 && len(r.PostForm["path"]) < total {
		opts.Paths = r.PostForm["path"]
		if len(opts.Paths) == 0 {
			return badRequest("no change is checked: check the ones to approve, or reject the proposal")
		}
	}
	_, _, err = u.opts.Proposals.Approve(r.Context(), q.store, p.ID, q.caller.Actor, opts)
	var ce *proposals.ConflictError
	if errors.As(err, &ce) {
		paths := make([]string, len(ce.Conflicts))
		for i, c := range ce.Conflicts {
			paths[i] = c.Path
		}
		return u.showProposal(w, r, q, p.ID, http.StatusConflict, paths)
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, q.storeURL("/proposals/"+p.ID), http.StatusSeeOther)
	return nil
}

func (u *UI) rejectProposal(w http.ResponseWriter, r *http.Request, q *request) error {
	p, err := u.proposalOf(r, q)
	if err != nil {
		return err
	}
	if c := r.PostFormValue("comment"); c != "" {
		_, err = u.opts.Proposals.RejectWithComment(r.Context(), q.store, p.ID, q.caller.Actor, c)
	} else {
		_, err = u.opts.Proposals.Reject(r.Context(), q.store, p.ID, q.caller.Actor)
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, q.storeURL("/proposals/"+p.ID), http.StatusSeeOther)
	return nil
}

func (u *UI) commentProposal(w http.ResponseWriter, r *http.Request, q *request) error {
	p, err := u.proposalOf(r, q)
	if err != nil {
		return err
	}
	if _, err := u.opts.Proposals.AddComment(q.storeID, p.ID, q.caller.Actor, r.PostFormValue("body")); err != nil {
		return err
	}
	http.Redirect(w, r, q.storeURL("/proposals/"+p.ID)+"#comments", http.StatusSeeOther)
	return nil
}
