package proposals

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

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

// Page returns a page of the store's proposals that opts.Filter selects, newest first (as
// List orders them), so that an answer holds a bounded number of them; the pages chain by
// NextCursor. A cursor holds the place of the page's last proposal in the store's list (the
// record's seq): the next page starts below it, so proposals opened meanwhile do not shift
// it, and a proposal dropped meanwhile (MaxDecided) does not break it. A cursor not of the
// form that pages return is a KindInvalid error; one of that form but for another place
// only starts the page there (past the last proposal: an empty page).
func (m *Manager) Page(storeID string, opts PageOptions) (Page, error) {
	limit := opts.Limit
	switch {
	case limit == 0:
		limit = DefaultPageSize
	case limit < 1 || limit > MaxPageSize:
		return Page{}, &gitstore.Error{Kind: gitstore.KindInvalid, Message: fmt.Sprintf("limit must be from 1 to %d, got %d", MaxPageSize, limit)}
	}
	var below int64 // 0: the first page (a seq is 1 or more)
	if opts.Cursor != "" {
		var err error
		if below, err = decodeCursor(opts.Cursor); err != nil {
			return Page{}, err
		}
	}
	defer m.lock(storeID)()
	l, err := m.list(storeID)
	if err != nil {
		return Page{}, err
	}
	seq := m.of(storeID).seq
	var page Page
	for i := len(l) - 1; i >= 0; i-- { // the list is in the order of seq
		p := l[i]
		if below > 0 && seq[p.ID] >= below || !opts.selects(p) {
			continue
		}
		if len(page.Proposals) == limit {
			page.NextCursor = encodeCursor(seq[page.Proposals[limit-1].ID])
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
// "q" and the seq to continue below.
const cursorPrefix = "page_"

func encodeCursor(seq int64) string {
	return cursorPrefix + base64.RawURLEncoding.EncodeToString([]byte("q"+strconv.FormatInt(seq, 10)))
}

func decodeCursor(cursor string) (int64, error) {
	rest, prefixed := strings.CutPrefix(cursor, cursorPrefix)
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	digits, marked := strings.CutPrefix(string(raw), "q")
	seq, nerr := strconv.ParseInt(digits, 10, 64)
	if !prefixed || err != nil || !marked || nerr != nil || seq < 1 {
		return 0, &gitstore.Error{Kind: gitstore.KindInvalid, Message: fmt.Sprintf("page %q is not a cursor that this listing returned", cursor)}
	}
	return seq, nil
}
