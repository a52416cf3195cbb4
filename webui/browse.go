package webui

import (
	"net/http"
	"strings"

	"github.com/gitmem/gitmem/gitstore"
)

// folderPage is one page of a folder's listing: its direct memories and subfolders. The
// listing reads one page of the catalog (depth 1 skips what is below a subfolder), so a
// folder of a large store costs what its page shows.
type folderPage struct {
	Prefix string
	Items  []gitstore.ListItem
	Next   string
	Sub    bool // a page after the first
}

const folderPageSize = 200

func (u *UI) browse(w http.ResponseWriter, r *http.Request, q *request) error {
	ctx := r.Context()
	qs := r.URL.Query()
	prefix := qs.Get("prefix")
	if prefix == "" {
		prefix = "/"
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if prefix != "/" {
		if err := gitstore.ValidatePathPrefix(prefix); err != nil {
			return err
		}
	}
	mr, err := q.store.ReaderAt(ctx, qs.Get("at"))
	if err != nil {
		return err
	}
	listPrefix := prefix
	if prefix == "/" {
		listPrefix = ""
	}
	p, err := mr.List(ctx, gitstore.ListOptions{PathPrefix: listPrefix, Depth: 1, Limit: folderPageSize, Cursor: qs.Get("cursor")})
	if err != nil {
		return err
	}
	u.render(w, r, q, http.StatusOK, "browse", folderPage{Prefix: prefix, Items: p.Items, Next: p.NextCursor, Sub: qs.Get("cursor") != ""})
	return nil
}
