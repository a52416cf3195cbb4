package httpapi

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/webhooks"
)

// Webhooks, a gitmem extension: POST /v1/webhooks makes one (its secret is shown in that
// answer only), GET lists them, GET/POST/DELETE /v1/webhooks/{id} read, change and delete
// one, GET /v1/webhooks/{id}/deliveries is its delivery log. Only keys that can write manage
// webhooks; a key limited to one store sees and makes webhooks of that store only.

type webhookJSON struct {
	Type          string    `json:"type"`
	ID            string    `json:"id"`
	URL           string    `json:"url"`
	Events        []string  `json:"events"`
	MemoryStoreID *string   `json:"memory_store_id"`
	Disabled      bool      `json:"disabled"`
	Secret        string    `json:"secret,omitempty"` // in the answer that made it only
	CreatedAt     string    `json:"created_at"`
	UpdatedAt     string    `json:"updated_at"`
	CreatedBy     string    `json:"created_by,omitempty"`
	Deliveries    []deliver `json:"recent_deliveries,omitempty"`
}

type deliver = webhooks.Delivery

func toWebhook(h webhooks.Hook, withSecret bool) webhookJSON {
	out := webhookJSON{Type: "webhook", ID: h.ID, URL: h.URL, Events: h.Events, Disabled: h.Disabled,
		CreatedAt: wireTime(h.CreatedAt), UpdatedAt: wireTime(h.UpdatedAt), CreatedBy: h.CreatedBy}
	if out.Events == nil {
		out.Events = []string{}
	}
	if h.StoreID != "" {
		out.MemoryStoreID = &h.StoreID
	}
	if withSecret {
		out.Secret = h.Secret
	}
	return out
}

// EnableWebhooks serves the webhook routes over reg. Call it before serving.
func (s *Server) EnableWebhooks(reg *webhooks.Registry) {
	g := s.e.Group("/v1/webhooks", middleware.BodyLimit(bodyLimit), s.authenticate, requireJSON, checkQuery)
	g.POST("", func(c echo.Context) error { return s.createWebhook(c, reg) })
	g.GET("", func(c echo.Context) error { return s.listWebhooks(c, reg) })
	g.GET("/:id", func(c echo.Context) error { return s.getWebhook(c, reg) })
	g.POST("/:id", func(c echo.Context) error { return s.updateWebhook(c, reg) })
	g.DELETE("/:id", func(c echo.Context) error { return s.deleteWebhook(c, reg) })
	g.GET("/:id/deliveries", func(c echo.Context) error { return s.webhookDeliveries(c, reg) })
}

// webhookCaller is the caller of a webhook route: one that can write.
func webhookCaller(c echo.Context) (caller, error) {
	cl := callerOf(c)
	if cl.key != nil && cl.key.Access != "read_write" {
		return cl, forbidden("this API key (%s) is %s; webhooks are managed with a read_write key", cl.key.ID, cl.key.Access)
	}
	return cl, nil
}

// hookOf finds webhook :id for a caller that may see it: a store-limited key sees only the
// webhooks of its store (others are not found, so their ids say nothing).
func hookOf(c echo.Context, reg *webhooks.Registry) (webhooks.Hook, caller, error) {
	cl, err := webhookCaller(c)
	if err != nil {
		return webhooks.Hook{}, cl, err
	}
	h, err := reg.Get(c.Param("id"))
	if err == nil && cl.key != nil && cl.key.StoreID != "" && h.StoreID != cl.key.StoreID {
		err = &gitstore.Error{Kind: gitstore.KindNotFound, Message: "no webhook " + c.Param("id")}
	}
	return h, cl, err
}

// webhookInput reads the fields of a create or an update.
func (s *Server) webhookInput(c echo.Context, cl caller) (webhooks.Input, error) {
	b, err := readBody(c, "url", "events", "memory_store_id", "disabled")
	if err != nil {
		return webhooks.Input{}, err
	}
	var in webhooks.Input
	if in.URL, err = b.str("url"); err != nil {
		return in, err
	}
	if b.has("events") {
		var ev []string
		if err := b.decode("events", &ev, "a list of event types"); err != nil {
			return in, err
		}
		in.Events = &ev
	}
	if b.has("disabled") {
		var dis bool
		if err := b.decode("disabled", &dis, "true or false"); err != nil {
			return in, err
		}
		in.Disabled = &dis
	}
	if in.StoreID, err = b.str("memory_store_id"); err != nil {
		return in, err
	}
	if in.StoreID != nil {
		// The key's limit first: a key limited to one store learns nothing of the others,
		// not even whether an id is one.
		if err := cl.checkStore(*in.StoreID); err != nil {
			return in, err
		}
		if _, err := s.data.Store(c.Request().Context(), *in.StoreID); err != nil {
			return in, err
		}
	}
	return in, nil
}

func (s *Server) createWebhook(c echo.Context, reg *webhooks.Registry) error {
	cl, err := webhookCaller(c)
	if err != nil {
		return err
	}
	in, err := s.webhookInput(c, cl)
	if err != nil {
		return err
	}
	if cl.key != nil && cl.key.StoreID != "" {
		if in.StoreID == nil {
			in.StoreID = &cl.key.StoreID // a store-limited key's webhooks are of its store
		}
	}
	ctx := c.Request().Context()
	// From now on: each store's cursor starts at its last event.
	starts, err := LatestEvents(ctx, s.data)
	if err != nil {
		return err
	}
	by := ""
	if cl.key != nil {
		by = cl.key.ID
	}
	h, err := reg.Create(ctx, in, by, starts)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toWebhook(h, true))
}

func (s *Server) listWebhooks(c echo.Context, reg *webhooks.Registry) error {
	cl, err := webhookCaller(c)
	if err != nil {
		return err
	}
	hooks, err := reg.List()
	if err != nil {
		return err
	}
	data := []webhookJSON{}
	for _, h := range hooks {
		if cl.key == nil || cl.key.StoreID == "" || h.StoreID == cl.key.StoreID {
			data = append(data, toWebhook(h, false))
		}
	}
	return c.JSON(http.StatusOK, page(data, ""))
}

func (s *Server) getWebhook(c echo.Context, reg *webhooks.Registry) error {
	h, _, err := hookOf(c, reg)
	if err != nil {
		return err
	}
	out := toWebhook(h, false)
	ds, err := reg.Deliveries(h.ID)
	if err != nil {
		return err
	}
	out.Deliveries = ds[:min(len(ds), 10)]
	return c.JSON(http.StatusOK, out)
}

func (s *Server) updateWebhook(c echo.Context, reg *webhooks.Registry) error {
	h, cl, err := hookOf(c, reg)
	if err != nil {
		return err
	}
	in, err := s.webhookInput(c, cl)
	if err != nil {
		return err
	}
	if h, err = reg.Update(c.Request().Context(), h.ID, in); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toWebhook(h, false))
}

func (s *Server) deleteWebhook(c echo.Context, reg *webhooks.Registry) error {
	h, _, err := hookOf(c, reg)
	if err != nil {
		return err
	}
	if _, err := reg.Delete(h.ID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, deletedJSON{Type: "webhook_deleted", ID: h.ID})
}

func (s *Server) webhookDeliveries(c echo.Context, reg *webhooks.Registry) error {
	h, _, err := hookOf(c, reg)
	if err != nil {
		return err
	}
	ds, err := reg.Deliveries(h.ID)
	if err != nil {
		return err
	}
	if ds == nil {
		ds = []webhooks.Delivery{}
	}
	return c.JSON(http.StatusOK, page(ds, ""))
}

// WebhookObject is a webhook as the API answers it (with its secret only if withSecret), for
// the CLI on a data directory.
func WebhookObject(h webhooks.Hook, withSecret bool) any { return toWebhook(h, withSecret) }

// LatestEvents returns the id of the last event of every store: where a new webhook's
// cursors start.
func LatestEvents(ctx context.Context, data *gitstore.DataDir) (map[string]string, error) {
	starts := map[string]string{}
	ids, err := data.Layout().StoreIDs()
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		st, err := data.Store(ctx, id)
		if err != nil {
			return nil, err
		}
		last, err := st.LastEvent(ctx)
		if err != nil {
			return nil, err
		}
		if last != "" {
			starts[id] = last
		}
	}
	return starts, nil
}
