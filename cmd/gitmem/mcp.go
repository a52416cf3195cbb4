package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/httpapi"
	"github.com/gitmem/gitmem/mcpserver"
	"github.com/gitmem/gitmem/search"
	"github.com/gitmem/gitmem/tooladapter"
)

func init() { register(newMCPCmd) }

func newMCPCmd(a *app) *cobra.Command {
	var stores []string
	var logLevel, sessionID string
	cmd := &cobra.Command{
		Use:   "mcp --store STORE[:read_only|:read_write][:PROMPT] [--store ...]",
		Short: "Serve the memory tools to an MCP client over stdio",
		Long: `Serves gitmem's tools over the Model Context Protocol on stdin and stdout, for an MCP
client that starts gitmem as a subprocess: the memory tool (memory) and the agent tools
memory_list, memory_search, memory_read, memory_write, memory_edit and memory_delete, bound
to 1 to 8 stores. With one store, /memories is that store; with several, each is a folder
/memories/<name>/. The server's instructions to the client's model are the session's system
prompt: the memory protocol, and what each store holds.

--store STORE[:read_only|:read_write][:PROMPT] attaches a store, by id or name, as "gitmem
agent" does; the prompt (at most 4,096 characters) tells the model what the store is for.

Writes are recorded as a session (a session_actor with a new sesn_ id, or --session), which
is printed on stderr at start. Nothing but MCP goes to stdout; logs go to stderr. While
"gitmem serve" holds the data directory (or with --server), it forwards every call to that
server's /mcp endpoint, with GITMEM_API_KEY; store prompts are then not available.`,
		Example: `  gitmem mcp --store notes
  gitmem mcp --store notes --store "Team Wiki:read_only:Conventions: follow them"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			if len(stores) == 0 {
				return fmt.Errorf("attach a store with --store STORE (by id or name; 1 to %d)", tooladapter.MaxStores)
			}
			if len(stores) > tooladapter.MaxStores {
				return fmt.Errorf("%d stores given; a session can have at most %d", len(stores), tooladapter.MaxStores)
			}
			specs := make([]storeSpec, len(stores))
			for i, s := range stores {
				var err error
				if specs[i], err = parseStoreSpec(s); err != nil {
					return err
				}
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			return a.serveMCP(cmd, log, specs, sessionID)
		},
	}
	cmd.Flags().StringArrayVar(&stores, "store", nil, "a store to attach: STORE[:read_only|:read_write][:PROMPT], STORE an id or a name (repeatable, up to 8)")
	cmd.Flags().StringVar(&sessionID, "session", "", "the session id (sesn_…) that writes are recorded as; a new one if empty")
	cmd.Flags().StringVar(&logLevel, "log-level", "warn", "debug, info, warn or error (logs go to stderr)")
	return cmd
}

// forwardMCP serves on stdio the tools of the server's /mcp, for the stores of specs, as one
// session: what "gitmem mcp" does while a server holds the data directory, or with --server.
func forwardMCP(cmd *cobra.Command, t target, log *slog.Logger, specs []storeSpec, sessionID string) error {
	ctx := cmd.Context()
	endpoint, hc, sessionID, err := mcpEndpoint(ctx, t, specs, sessionID)
	if err != nil {
		return err
	}
	errOut := cmd.ErrOrStderr()
	fmt.Fprintf(errOut, "gitmem mcp: serving on stdio the memory tools of %s/mcp\n", t.srv.URL())
	fmt.Fprintf(errOut, "session %s (every write is a version by this session_actor)\n", sessionID)
	err = mcpserver.Forward(ctx, endpoint, hc, &mcp.StdioTransport{}, log)
	if errors.Is(err, context.Canceled) {
		return nil // interrupted
	}
	return err
}

// mcpEndpoint is the server's /mcp for the stores of specs, and the HTTP client that calls
// it with the key and the session (sessionID, or a new one, which it returns).
func mcpEndpoint(ctx context.Context, t target, specs []storeSpec, sessionID string) (string, *http.Client, string, error) {
	if sessionID == "" {
		sessionID = gitstore.NewID(tooladapter.SessionPrefix, time.Now())
	}
	q := url.Values{}
	for _, spec := range specs {
		if spec.prompt != "" {
			return "", nil, "", usageError{fmt.Errorf("a store's prompt (%s) is not sent to a server: attach it without one, or stop the server that holds the data directory", quoteArg(spec.ref))}
		}
		id, err := resolveStore(ctx, t.srv, spec.ref)
		if err != nil {
			return "", nil, "", err
		}
		q.Add("store", id+":"+string(spec.access))
	}
	header := http.Header{httpapi.SessionHeader: {sessionID}}
	if key := os.Getenv("GITMEM_API_KEY"); key != "" {
		header.Set("x-api-key", key)
	}
	hc := &http.Client{Transport: headerTransport{header: header, next: http.DefaultTransport}}
	return t.srv.URL() + httpapi.MCPPath + "?" + q.Encode(), hc, sessionID, nil
}

// headerTransport adds headers to every request.
type headerTransport struct {
	header http.Header
	next   http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header[k] = v
	}
	return h.next.RoundTrip(r)
}

// serveMCP serves the tools on stdio until the client closes stdin or the process is
// interrupted.
func (a *app) serveMCP(cmd *cobra.Command, log *slog.Logger, specs []storeSpec, sessionID string) error {
	ctx := cmd.Context()
	t, done, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer done() // nothing to report on stdio
	if t.srv != nil {
		return forwardMCP(cmd, t, log, specs, sessionID)
	}
	d := t.data
	idx := search.New(d, search.Options{Logger: log})
	defer idx.Close() // before d.Close: deferred calls run last first

	opts := tooladapter.Options{ID: sessionID, Search: idx}
	for _, spec := range specs {
		st, err := findStore(ctx, d, spec.ref)
		if err != nil {
			return err
		}
		opts.Stores = append(opts.Stores, tooladapter.Attachment{Store: st, Access: spec.access, Prompt: spec.prompt})
		// Start indexing now, so that the first memory_search need not wait for it.
		if err := idx.Watch(ctx, st.ID()); err != nil {
			return err
		}
	}
	sess, err := tooladapter.NewSession(ctx, opts)
	if err != nil {
		return err
	}

	errOut := cmd.ErrOrStderr()
	fmt.Fprintf(errOut, "gitmem mcp: serving the memory tools on stdio\n")
	fmt.Fprintf(errOut, "session %s (every write is a version by this session_actor)\n", sess.ID())
	for _, at := range opts.Stores {
		info, err := at.Store.Info(ctx)
		if err != nil {
			return err
		}
		mount, _ := sess.MountPath(info.ID)
		fmt.Fprintf(errOut, "  %s is the store %q (%s, %s)\n", mount, info.Name, info.ID, at.Access)
	}
	fmt.Fprintf(errOut, "its versions: gitmem log %s --session %s\n", quoteArg(specs[0].ref), sess.ID())

	err = mcpserver.New(sess, log).Run(ctx, &mcp.StdioTransport{})
	if errors.Is(err, context.Canceled) {
		return nil // interrupted
	}
	return err
}
