package webui

import (
	"context"
	"net/http"
	"strings"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/gitsync"
)

// storeRow is a store as the stores page lists it.
type storeRow struct {
	Info       gitstore.StoreInfo
	Usage      gitstore.Usage
	LastChange *gitstore.Version
	Remotes    []remoteRow
}

type remoteRow struct {
	gitsync.Remote
	State gitsync.State
}

type storesPage struct {
	Stores   []storeRow
	Archived bool // archived stores are listed
	Next     string
}

func (u *UI) storeList(w http.ResponseWriter, r *http.Request, q *request) error {
	ctx := r.Context()
	page := storesPage{Archived: r.URL.Query().Get("archived") == "1"}
	var infos []gitstore.StoreInfo
	if k := q.caller.Key; k != nil && k.StoreID != "" {
		st, err := u.opts.Data.Store(ctx, k.StoreID)
		if err != nil {
			return err
		}
		info, err := st.Info(ctx)
		if err != nil {
			return err
		}
		infos = append(infos, info)
	} else {
		p, err := u.opts.Data.ListStores(ctx, gitstore.StoreListOptions{IncludeArchived: page.Archived, Limit: 100, Cursor: r.URL.Query().Get("page")})
		if err != nil {
			return err
		}
		infos, page.Next = p.Stores, p.NextCursor
	}
	for _, info := range infos {
		row, err := u.storeRow(ctx, info)
		if err != nil {
			return err
		}
		page.Stores = append(page.Stores, row)
	}
	u.render(w, r, q, http.StatusOK, "stores", page)
	return nil
}

func (u *UI) storeRow(ctx context.Context, info gitstore.StoreInfo) (storeRow, error) {
	row := storeRow{Info: info}
	st, err := u.opts.Data.Store(ctx, info.ID)
	if err != nil {
		return row, err
	}
	if row.Usage, err = st.Usage(ctx); err != nil {
		return row, err
	}
	last, err := st.Versions(ctx, gitstore.VersionFilter{Limit: 1})
	if err != nil {
		return row, err
	}
	if len(last.Versions) == 1 {
		row.LastChange = &last.Versions[0]
	}
	remotes, err := gitsync.Remotes(u.opts.Data.Dir(), info.ID)
	if err != nil {
		return row, err
	}
	states, err := gitsync.States(u.opts.Data.Dir(), info.ID)
	if err != nil {
		return row, err
	}
	for _, rm := range remotes {
		row.Remotes = append(row.Remotes, remoteRow{Remote: rm, State: states[rm.Name]})
	}
	return row, nil
}

func (u *UI) createStore(w http.ResponseWriter, r *http.Request, q *request) error {
	if k := q.caller.Key; k != nil && k.StoreID != "" {
		return forbidden("this API key (" + k.ID + ") is limited to one memory store: it cannot create others")
	}
	st, err := u.opts.Data.CreateStore(r.Context(), gitstore.CreateStoreInput{
		Name:        strings.TrimSpace(r.PostFormValue("name")),
		Description: formText(r, "description"),
		Actor:       q.caller.Actor,
	})
	if err != nil {
		return err
	}
	return redirect(w, r, Prefix+"stores/"+st.ID())
}

func (u *UI) updateStore(w http.ResponseWriter, r *http.Request, q *request) error {
	p := gitstore.StorePatch{Actor: q.caller.Actor}
	if _, ok := r.PostForm["name"]; ok {
		name := strings.TrimSpace(r.PostFormValue("name"))
		p.Name = &name
	}
	if _, ok := r.PostForm["description"]; ok {
		d := formText(r, "description")
		p.Description = &d
	}
	if _, err := u.opts.Data.UpdateStore(r.Context(), q.storeID, p); err != nil {
		return err
	}
	return redirect(w, r, q.storeURL(""))
}

func (u *UI) archiveStore(w http.ResponseWriter, r *http.Request, q *request) error {
	if r.PostFormValue("confirm") != q.info.Name && r.PostFormValue("confirm") != q.storeID {
		return badRequest("to archive the store, type its name (or id) in the box: archiving cannot be undone, and the store becomes read-only")
	}
	if _, err := q.store.Archive(r.Context(), q.caller.Actor); err != nil {
		return err
	}
	return redirect(w, r, q.storeURL(""))
}
