package webui

import (
	"net/http"

	"github.com/gitmem/gitmem/webhooks"
)

// The webhooks page shows each webhook the caller may manage (a key that can write; a key
// limited to a store: that store's) with its delivery log: what was sent, what the receiver
// answered, how many attempts it took and the last error, so that a receiver that fails is
// seen before its events pile up. Webhooks are made and changed with the API or the CLI.

type hookRow struct {
	Hook       webhooks.Hook
	StoreName  string
	Deliveries []webhooks.Delivery
	Failing    bool // the newest delivery has not gone through yet
}

type webhooksPage struct {
	Hooks []hookRow
}

// hookLogRows is how much of each webhook's log the page shows.
const hookLogRows = 20

func (u *UI) webhooks(w http.ResponseWriter, r *http.Request, q *request) error {
	var page webhooksPage
	if u.opts.Webhooks != nil {
		hooks, err := u.opts.Webhooks.List()
		if err != nil {
			return err
		}
		for _, h := range hooks {
			if k := q.caller.Key; k != nil && k.StoreID != "" && h.StoreID != k.StoreID {
				continue
			}
			row := hookRow{Hook: h}
			ds, err := u.opts.Webhooks.Deliveries(h.ID)
			if err != nil {
				return err
			}
			row.Deliveries = ds[:min(len(ds), hookLogRows)]
			row.Failing = len(ds) > 0 && !ds[0].Delivered
			if h.StoreID != "" {
				if st, err := u.opts.Data.Store(r.Context(), h.StoreID); err == nil {
					if info, err := st.Info(r.Context()); err == nil {
						row.StoreName = info.Name
					}
				}
			}
			page.Hooks = append(page.Hooks, row)
		}
	}
	u.render(w, r, q, http.StatusOK, "webhooks", page)
	return nil
}
