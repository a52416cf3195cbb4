package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/client"
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
memory_list, memory_search, memory_read, memory_write, memory_edit, memory_delete and
memory_changes (what others changed, with a cursor to follow), bound
to 1 to 8 stores. With one store, /memories is that store; with several, each is a folder
/memories/<name>/. The server's instructions to the client's model are the session's system
prompt: the memory protocol, and what each store holds.

--store STORE[:read_only|:read_write][:PROMPT] attaches a store, by id or name, as "gitmem
agent" does; the prompt (at most 4,096 characters) tells the model what the store is for.

Writes are recorded as a session (a session_actor with a new sesn_ id, or --session), which
is printed on stderr at start. Nothing but MCP goes to stdout; logs go to stderr. While
"gitmem serve" holds the data directory (or with --server), it forwards every call to that
server's /mcp endpoint, with GITMEM_API_KEY.`,
		Example: `  gitmem mcp --store notes
  gitmem mcp --store notes --store "Team Wiki:read_only:Conventions: follow them"`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			level, err := parseLogLevel(logLevel)
			if err != nil {
				return err
			}
			if len(stores) == 0 {
				return usageError{fmt.Errorf("attach a store with --store STORE (by id or name; 1 to %d)", tooladapter.MaxStores)}
			}
			if len(stores) > tooladapter.MaxStores {
				return usageError{fmt.Errorf("%d stores given; a session can have at most %d", len(stores), tooladapter.MaxStores)}
			}
			specs := make([]storeSpec, len(stores))
			for i, s := range stores {
				var err error
				if specs[i], err = parseStoreSpec(s); err != nil {
					return usageError{err}
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
	tools, sessionID, infos, err := connectTools(ctx, t, specs, sessionID)
	if err != nil {
		return err
	}
	defer tools.Close()
	errOut := cmd.ErrOrStderr()
	fmt.Fprintf(errOut, "gitmem mcp: serving on stdio the memory tools of %s%s\n", t.srv.URL(), httpapi.MCPPath)
	fmt.Fprintf(errOut, "session %s (every write is a version by this session_actor)\n", sessionID)
	printMounts(errOut, tooladapter.MountPaths(infos), infos, specs)
	printVersionsHint(errOut, specs, sessionID)
	err = mcpserver.Forward(ctx, tools.ClientSession, mcpserver.Stdio(), log)
	if errors.Is(err, context.Canceled) {
		return nil // interrupted
	}
	return err
}

// connectTools connects to the tools of the server's /mcp for the stores of specs, their
// prompts included, as the session sessionID (or a new one, which it returns); infos are the
// stores', in the order of specs.
func connectTools(ctx context.Context, t target, specs []storeSpec, sessionID string) (*client.Tools, string, []gitstore.StoreInfo, error) {
	if sessionID == "" {
		sessionID = gitstore.NewID(tooladapter.SessionPrefix, time.Now())
	}
	stores := make([]client.ToolStore, len(specs))
	infos := make([]gitstore.StoreInfo, len(specs))
	for i, spec := range specs {
		// Asked through the API first, whose errors say what to do (a key to set, a store
		// not found).
		id, err := resolveStore(ctx, t.srv, spec.ref)
		if err != nil {
			return nil, "", nil, err
		}
		if infos[i], err = t.srv.Store(id).Info(ctx); err != nil {
			return nil, "", nil, err
		}
		stores[i] = client.ToolStore{ID: id, Access: spec.access, Prompt: spec.prompt}
	}
	tools, err := t.srv.ConnectTools(ctx, stores, sessionID)
	return tools, sessionID, infos, err
}

// printMounts says where a session sees each of its stores: "  /memories is the store …".
func printMounts(w io.Writer, mounts []string, infos []gitstore.StoreInfo, specs []storeSpec) {
	for i, info := range infos {
		fmt.Fprintf(w, "  %s is the store %q (%s, %s)\n", mounts[i], info.Name, info.ID, specs[i].access)
	}
}

// printSessionMounts says where a local session sees each of its stores, as printMounts.
func printSessionMounts(ctx context.Context, w io.Writer, sess *tooladapter.Session, atts []tooladapter.Attachment, specs []storeSpec) error {
	mounts := make([]string, len(atts))
	infos := make([]gitstore.StoreInfo, len(atts))
	for i, at := range atts {
		var err error
		if infos[i], err = at.Store.Info(ctx); err != nil {
			return err
		}
		mounts[i], _ = sess.MountPath(infos[i].ID)
	}
	printMounts(w, mounts, infos, specs)
	return nil
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
	if opts.ID == "" {
		opts.ID = gitstore.NewID(tooladapter.SessionPrefix, time.Now())
	}
	props, err := proposeTo(d, opts.Stores, opts.ID)
	if err != nil {
		return err
	}
	defer props.Close() // after the session's last call
	sess, err := tooladapter.NewSession(ctx, opts)
	if err != nil {
		return err
	}

	errOut := cmd.ErrOrStderr()
	fmt.Fprintf(errOut, "gitmem mcp: serving the memory tools on stdio\n")
	fmt.Fprintf(errOut, "session %s (every write is a version by this session_actor)\n", sess.ID())
	if err := printSessionMounts(ctx, errOut, sess, opts.Stores, specs); err != nil {
		return err
	}
	printVersionsHint(errOut, specs, sess.ID())

	err = mcpserver.New(sess, log).Run(ctx, mcpserver.Stdio())
	if errors.Is(err, context.Canceled) {
		return nil // interrupted
	}
	return err
}

// printVersionsHint says where the session's versions show: in the log of its first store,
// or, if that store is attached to propose, in its proposal until a person approves it.
func printVersionsHint(w io.Writer, specs []storeSpec, sessionID string) {
	store := quoteArg(specs[0].ref)
	if specs[0].access == tooladapter.Propose {
		fmt.Fprintf(w, "its changes are proposed: gitmem proposals list %s; once approved, gitmem log %s --session %s\n", store, store, sessionID)
		return
	}
	fmt.Fprintf(w, "its versions: gitmem log %s --session %s\n", store, sessionID)
}
