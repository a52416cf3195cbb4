package proposals

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"github.com/oklog/ulid/v2"

	"github.com/gitmem/gitmem/gitstore"
)

// Page sizes of Manager.Page: the API's list takes a limit up to MaxPageSize, DefaultPageSize
// without one, as the memory store API's lists do.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// PageOptions says which page of a store's proposals Manager.Page returns.
type PageOptions struct {
	Filter
	// Limit is the most proposals on the page: 1 to MaxPageSize, 0 for DefaultPageSize.
	Limit int
	// Cursor is a page's NextCursor, to continue after it; "" for the first page.
	Cursor string
}

// Page is a page of a store's proposals.
type Page struct {
	Proposals []Proposal
	// NextCursor continues the listing after Proposals (PageOptions.Cursor); "" if no
	// proposal that the filter selects follows them.
	NextCursor string
}

// Page returns a page of the store's proposals that opts.Filter selects, newest first (in
// the order they opened), so that an answer holds a bounded number of them; the pages chain
// by NextCursor. A cursor names the page's last proposal, which its caller was shown, and
// nothing else: a place in the store's list, or a count of its proposals, would tell a
// propose key, which lists its own key's proposals only, how many others opened between two
// of its pages. The next page starts below that proposal, so proposals opened meanwhile do
// not shift it; if the proposal was dropped meanwhile (MaxDecided), or the caller may not
// read it, the page starts below its id instead (ids are ordered by the time they opened,
// as the list is). A cursor not of the form that pages return is a KindInvalid error.
func (m *Manager) Page(storeID string, opts PageOptions) (Page, error) {
	limit := opts.Limit
	switch {
	case limit == 0:
		limit = DefaultPageSize
	case limit < 1 || limit > MaxPageSize:
		return Page{}, &gitstore.Error{Kind: gitstore.KindInvalid, Message: fmt.Sprintf("limit must be from 1 to %d, got %d", MaxPageSize, limit)}
	}
	var after string // the last proposal of the page before; "" for the first page
	if opts.Cursor != "" {
		var err error
		if after, err = decodeCursor(opts.Cursor); err != nil {
			return Page{}, err
		}
	}
	unlock, err := m.lock(storeID)
	if err != nil {
		return Page{}, err
	}
	defer unlock()
	l, err := m.list(storeID)
	if err != nil {
		return Page{}, err
	}
	keep := opts.selects
	if after != "" {
		i := slices.IndexFunc(l, func(p Proposal) bool { return p.ID == after })
		if i >= 0 && l[i].ReadableBy(opts.ReaderKeyID, opts.ReaderProposes) {
			l = l[:i] // the list is in the order the proposals opened
		} else { // the same place for an id the caller may not read as for one gone
			keep = func(p Proposal) bool { return p.ID < after && opts.selects(p) }
		}
	}
	var page Page
	for i := len(l) - 1; i >= 0; i-- {
		p := l[i]
		if !keep(p) {
			continue
		}
		if len(page.Proposals) == limit {
			page.NextCursor = encodeCursor(page.Proposals[limit-1].ID)
			break
		}
		page.Proposals = append(page.Proposals, p)
	}
	for i, p := range page.Proposals {
		page.Proposals[i] = m.current(p)
	}
	return page, nil
}

// A cursor is opaque to callers, as the store's listings' are: "page_" and the base64 of
// "i" and the id of the page's last proposal. Cursors of before held "q" and a place in the
// store's list; they are refused with a message of their own.
const (
	cursorPrefix = "page_"
	cursorMark   = "i"
	oldMark      = "q"
)

func encodeCursor(id string) string {
	return cursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(cursorMark+id))
}

func decodeCursor(cursor string) (string, error) {
	rest, prefixed := strings.CutPrefix(cursor, cursorPrefix)
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if prefixed && err == nil {
		if id, ok := strings.CutPrefix(string(raw), cursorMark); ok && isID(id) {
			return id, nil
		}
		if digits, ok := strings.CutPrefix(string(raw), oldMark); ok && digits != "" && strings.Trim(digits, "0123456789") == "" {
			return "", &gitstore.Error{Kind: gitstore.KindInvalid, Message: fmt.Sprintf("page %q is a cursor of an older form, which this listing no longer takes: list again from the first page", cursor)}
		}
	}
	return "", &gitstore.Error{Kind: gitstore.KindInvalid, Message: fmt.Sprintf("page %q is not a cursor that this listing returned", cursor)}
}

// isID tells whether id is a proposal id.
func isID(id string) bool {
	rest, ok := strings.CutPrefix(id, Prefix)
	_, err := ulid.ParseStrict(rest)
	return ok && err == nil
}
