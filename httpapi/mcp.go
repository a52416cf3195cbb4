package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gitmem/gitmem/mcpserver"
	"github.com/gitmem/gitmem/tooladapter"
)

// MCPPath is where the tools are served over MCP's streamable HTTP transport.
const MCPPath = "/mcp"

// mcpBodyLimit bounds an MCP request body, as bodyLimit does for the API. The SDK enforces
// it while reading, so responses still stream (no BodyLimit middleware on this route).
const mcpBodyLimit = mcpserver.MaxMessageBytes

// readOnlySuffix after a store id in ?store= attaches the store read-only.
const readOnlySuffix = ":read_only"

// storeParam splits a ?store= value, STORE[:ACCESS[:PROMPT]]: the store ends at the first
// ":read_only" or ":read_write" that ends the value or is followed by ':', and the prompt
// is what follows that ':', colons and all. A value without an access is all store (a name
// may contain ':'), attached read-write.
func storeParam(v string) (ref string, access tooladapter.Access, prompt string) {
	for i := strings.IndexByte(v, ':'); i >= 0; {
		rest := v[i+1:]
		for _, a := range []tooladapter.Access{tooladapter.ReadOnly, tooladapter.ReadWrite, tooladapter.Propose} {
			if after, ok := strings.CutPrefix(rest, string(a)); ok && (after == "" || after[0] == ':') {
				return v[:i], a, strings.TrimPrefix(after, ":")
			}
		}
		j := strings.IndexByte(rest, ':')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return v, tooladapter.ReadWrite, ""
}

type mcpServerKey struct{}

// mcpRoutes serves the memory tool and the agent tools over MCP (streamable HTTP) at
//
//	/mcp?store=memstore_…|NAME[:read_only|:read_write|:propose[:PROMPT]][&store=…]
//
// with the API's keys. Each request is handled statelessly: the tools are bound to the
// stores it names for its caller, as POST /v1/memory_stores/{id}/tools/{name} binds them,
// so a key's access, its store limit, its revocation and x-gitmem-session-id apply to every
// request of an MCP session.
func (s *Server) mcpRoutes() {
	getServer := func(r *http.Request) *mcp.Server {
		srv, _ := r.Context().Value(mcpServerKey{}).(*mcp.Server)
		return srv
	}
	opts := mcp.StreamableHTTPOptions{Stateless: true, MaxRequestBodyBytes: mcpBodyLimit, Logger: s.log.With("component", "mcp")}
	// authenticate already refuses, without keys, a Host that is not loopback (DNS
	// rebinding), for every route alike.
	opts.DisableLocalhostProtection = true
	h := mcp.NewStreamableHTTPHandler(getServer, &opts)
	s.e.Any(MCPPath, func(c echo.Context) error {
		req := c.Request()
		if req.Method == http.MethodPost {
			srv, err := s.mcpServer(c)
			if err != nil {
				return err
			}
			req = req.WithContext(context.WithValue(req.Context(), mcpServerKey{}, srv))
		}
		// Other methods need no tools: the stateless handler answers them (405: it keeps no
		// sessions to stream from or delete).
		h.ServeHTTP(c.Response(), req)
		return nil
	}, s.authenticate, requireJSON)
}

// mcpServer builds the MCP server of one request: the tools bound to the stores of its
// ?store= parameters, for its caller.
func (s *Server) mcpServer(c echo.Context) (*mcp.Server, error) {
	cl := callerOf(c)
	refs := c.QueryParams()["store"]
	if len(refs) == 0 {
		return nil, badRequest("query parameter store is required: %s?store=memstore_… attaches a memory store to the tools "+
			"(repeat it for up to %d stores; add %s to attach one read-only, and :read_write:PROMPT or :read_only:PROMPT to say what it is for)",
			MCPPath, tooladapter.MaxStores, readOnlySuffix)
	}
	if len(refs) > tooladapter.MaxStores {
		return nil, badRequest("an MCP session can attach at most %d memory stores, got %d", tooladapter.MaxStores, len(refs))
	}
	ctx := c.Request().Context()
	stores := make([]tooladapter.Attachment, len(refs))
	for i, ref := range refs {
		named, access, prompt := storeParam(ref)
		id, err := s.data.ResolveStore(ctx, named) // an id, or a store's name
		if err != nil {
			// A key limited to one store learns nothing of the names of others.
			if cerr := cl.checkStore(named); cerr != nil {
				return nil, cerr
			}
			return nil, err
		}
		if err := cl.checkStore(id); err != nil {
			return nil, err
		}
		st, err := s.data.Store(ctx, id)
		if err != nil {
			return nil, err
		}
		stores[i] = tooladapter.Attachment{Store: st, Access: access, Prompt: prompt}
	}
	sess, err := s.toolSession(c, cl, stores...)
	if err != nil {
		return nil, err
	}
	return mcpserver.New(sess, s.log), nil
}
