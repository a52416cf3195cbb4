package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/httpapi"
	"github.com/gitmem/gitmem/webhooks"
)

func init() { register(newWebhooksCmd) }

func newWebhooksCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "webhooks",
		Short: "Create, list, change and delete the webhooks that get each change to memory",
		Long: `A webhook gets every change to memory (of one store, or of all) as a signed POST, in order,
retried until the receiver takes it (see docs/events.md). gitmem serve delivers them; these
commands work on the data directory, or through the server that holds it (or --server).`,
	}
	cmd.AddCommand(newWebhooksCreateCmd(a), newWebhooksListCmd(a), newWebhooksShowCmd(a), newWebhooksUpdateCmd(a),
		newWebhooksDeleteCmd(a), newWebhooksDeliveriesCmd(a))
	return cmd
}

// hookCall does one webhook operation: through the server's API, or on the data directory's
// registry with the same checks and the same answer.
func (a *app) hookCall(ctx context.Context, method, path string, body map[string]any, out any) error {
	return a.withTarget(ctx, func(t target) error {
		if ref, ok := body["memory_store_id"].(string); ok && ref != "" {
			id, err := resolveStore(ctx, t.lister(), ref) // a name, as everywhere in the CLI
			if err != nil {
				return err
			}
			body["memory_store_id"] = id
		}
		if t.srv != nil {
			return t.srv.Call(ctx, method, "/v1/webhooks"+path, body, out)
		}
		reg := webhooks.Open(t.data.Layout())
		id, sub, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
		in, err := hookInput(body)
		if err != nil {
			return err
		}
		var v any
		switch {
		case method == http.MethodPost && id == "":
			starts, err := httpapi.LatestEvents(ctx, t.data)
			if err != nil {
				return err
			}
			h, err := reg.Create(ctx, in, "", starts)
			if err != nil {
				return err
			}
			v = httpapi.WebhookObject(h, true)
		case method == http.MethodGet && id == "":
			hooks, err := reg.List()
			if err != nil {
				return err
			}
			data := []any{}
			for _, h := range hooks {
				data = append(data, httpapi.WebhookObject(h, false))
			}
			v = map[string]any{"data": data}
		case method == http.MethodGet && sub == "deliveries":
			ds, err := reg.Deliveries(id)
			if err != nil {
				return err
			}
			if ds == nil {
				ds = []webhooks.Delivery{}
			}
			v = map[string]any{"data": ds}
		case method == http.MethodGet:
			h, err := reg.Get(id)
			if err != nil {
				return err
			}
			v = httpapi.WebhookObject(h, false)
		case method == http.MethodPost:
			h, err := reg.Update(ctx, id, in)
			if err != nil {
				return err
			}
			v = httpapi.WebhookObject(h, false)
		case method == http.MethodDelete:
			h, err := reg.Delete(id)
			if err != nil {
				return err
			}
			v = map[string]any{"type": "webhook_deleted", "id": h.ID}
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, out)
	})
}

func hookInput(body map[string]any) (webhooks.Input, error) {
	var in webhooks.Input
	if u, ok := body["url"].(string); ok {
		in.URL = &u
	}
	if ev, ok := body["events"].([]string); ok {
		in.Events = &ev
	}
	if s, ok := body["memory_store_id"].(string); ok {
		in.StoreID = &s
	}
	if d, ok := body["disabled"].(bool); ok {
		in.Disabled = &d
	}
	return in, nil
}

// hookDo calls hookCall, decodes the answer into out for the text output, and with asJSON
// prints the answer as the API gave it.
func (a *app) hookDo(cmd *cobra.Command, method, path string, body map[string]any, out any, asJSON bool) (printed bool, err error) {
	var raw json.RawMessage
	if err := a.hookCall(cmd.Context(), method, path, body, &raw); err != nil {
		return false, err
	}
	return printOrDecode(cmd, raw, asJSON, out)
}

// printOrDecode prints an API answer as JSON, as the server gave it, with asJSON (printed),
// or else decodes it into out for a command's text output.
func printOrDecode(cmd *cobra.Command, raw json.RawMessage, asJSON bool, out any) (printed bool, err error) {
	if asJSON {
		var v any
		json.Unmarshal(raw, &v)
		return true, printJSON(cmd.OutOrStdout(), v)
	}
	return false, json.Unmarshal(raw, out)
}

type hookOut struct {
	ID            string   `json:"id"`
	URL           string   `json:"url"`
	Events        []string `json:"events"`
	MemoryStoreID *string  `json:"memory_store_id"`
	Disabled      bool     `json:"disabled"`
	Secret        string   `json:"secret"`
	CreatedAt     string   `json:"created_at"`
}

func (h hookOut) scope() string {
	store, events := "all stores", "all events"
	if h.MemoryStoreID != nil {
		store = *h.MemoryStoreID
	}
	if len(h.Events) > 0 {
		events = strings.Join(h.Events, ",")
	}
	return store + ", " + events
}

func hookFlags(cmd *cobra.Command, body map[string]any, events *[]string, store *string) {
	if cmd.Flags().Changed("events") {
		body["events"] = *events
	}
	if cmd.Flags().Changed("store") {
		body["memory_store_id"] = *store
	}
}

func newWebhooksCreateCmd(a *app) *cobra.Command {
	var events []string
	var store string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "create URL",
		Short: "Create a webhook and print its signing secret, once",
		Example: `  gitmem webhooks create https://chat.example.com/hooks/memory --store notes
  gitmem webhooks create https://audit.example.com/in --events memory.deleted,memory.redacted`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{"url": args[0]}
			hookFlags(cmd, body, &events, &store)
			var h hookOut
			if printed, err := a.hookDo(cmd, http.MethodPost, "", body, &h, asJSON); err != nil || printed {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created webhook %s to %s (%s)\n\n  %s\n\nThis signing secret is shown only now: the receiver checks each delivery with it (Standard Webhooks).\n",
				h.ID, h.URL, h.scope(), h.Secret)
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&events, "events", nil, "only these events (memory.created, memory.modified, memory.deleted, memory.redacted)")
	cmd.Flags().StringVar(&store, "store", "", "only this store's changes (id or name)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the webhook as JSON, its secret in the field secret")
	return cmd
}

func newWebhooksListCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List webhooks (never their secrets)",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			var page struct {
				Data []hookOut `json:"data"`
			}
			if printed, err := a.hookDo(cmd, http.MethodGet, "", nil, &page, asJSON); err != nil || printed {
				return err
			}
			if len(page.Data) == 0 {
				a.sayNone(cmd, "no webhooks (create one with: gitmem webhooks create URL)")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tURL\tSCOPE\tSTATE")
			for _, h := range page.Data {
				state := "on"
				if h.Disabled {
					state = "off"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.ID, h.URL, h.scope(), state)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the webhooks as JSON")
	return cmd
}

func newWebhooksShowCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a webhook",
		Args:  exactArgs("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var h hookOut
			if printed, err := a.hookDo(cmd, http.MethodGet, "/"+args[0], nil, &h, asJSON); err != nil || printed {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s to %s (%s), created %s, disabled: %v\n", h.ID, h.URL, h.scope(), h.CreatedAt, h.Disabled)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the webhook as JSON")
	return cmd
}

func newWebhooksUpdateCmd(a *app) *cobra.Command {
	var events []string
	var store, url string
	var disable, enable, asJSON bool
	cmd := &cobra.Command{
		Use:     "update ID",
		Short:   "Change a webhook's URL, events or store, or turn it off and on",
		Example: `  gitmem webhooks update whk_01M... --disable`,
		Args:    exactArgs("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{}
			hookFlags(cmd, body, &events, &store)
			if url != "" {
				body["url"] = url
			}
			if disable && enable {
				return usageError{fmt.Errorf("--disable and --enable contradict each other")}
			}
			if disable || enable {
				body["disabled"] = disable
			}
			if len(body) == 0 {
				return usageError{fmt.Errorf("nothing to change: give --url, --events, --store, --disable or --enable")}
			}
			var h hookOut
			if printed, err := a.hookDo(cmd, http.MethodPost, "/"+args[0], body, &h, asJSON); err != nil || printed {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "updated webhook %s to %s (%s), disabled: %v\n", h.ID, h.URL, h.scope(), h.Disabled)
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", "", "the receiver's new URL")
	cmd.Flags().StringSliceVar(&events, "events", nil, "only these events (empty: all)")
	cmd.Flags().StringVar(&store, "store", "", "only this store's changes")
	cmd.Flags().BoolVar(&disable, "disable", false, "stop delivering (events wait, none is lost)")
	cmd.Flags().BoolVar(&enable, "enable", false, "deliver again")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the webhook as JSON")
	return cmd
}

func newWebhooksDeleteCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a webhook",
		Args:  exactArgs("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var out map[string]any
			if printed, err := a.hookDo(cmd, http.MethodDelete, "/"+args[0], nil, &out, asJSON); err != nil || printed {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted webhook %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the deletion as JSON")
	return cmd
}

func newWebhooksDeliveriesCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "deliveries ID",
		Short: "Show a webhook's delivery log, newest first",
		Args:  exactArgs("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var page struct {
				Data []webhooks.Delivery `json:"data"`
			}
			if printed, err := a.hookDo(cmd, http.MethodGet, "/"+args[0]+"/deliveries", nil, &page, asJSON); err != nil || printed {
				return err
			}
			if len(page.Data) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "nothing delivered yet")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tEVENT\tTYPE\tSTATUS\tATTEMPTS\tLAST ERROR")
			for _, d := range page.Data {
				status := fmt.Sprint(d.Status)
				if d.Delivered {
					status += " delivered"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", d.At.Local().Format("2006-01-02 15:04:05"), d.EventID, d.Type, status, d.Attempts, d.LastError)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the log as JSON")
	return cmd
}
