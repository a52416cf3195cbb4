package httpapi

import (
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/tooladapter"
)

// toolRoutes serves the memory tool and the agent tools of one store:
//
//	GET  /v1/memory_stores/{id}/tools         the tools' definitions
//	POST /v1/memory_stores/{id}/tools/{name}  a tool call; the body is the call's input
func (s *Server) toolRoutes(v1 *echo.Group) {
	v1.GET("/memory_stores/:store/tools", s.listTools)
	v1.POST("/memory_stores/:store/tools/:name", s.callTool)
}

type toolListJSON struct {
	Data []tooladapter.Tool `json:"data"`
}

type toolResultJSON struct {
	Type    string `json:"type"`
	Content string `json:"content"`
	IsError bool   `json:"is_error"`
}

func (s *Server) listTools(c echo.Context) error {
	if _, _, err := s.store(c, false); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toolListJSON{Data: tooladapter.Tools()})
}

// callTool answers a tool call. A call that fails because of its input is still a 200: its
// result, with is_error set, is what the model should read. Only a request the route
// cannot take (unknown tool, store or key) is an HTTP error.
func (s *Server) callTool(c echo.Context) error {
	st, cl, err := s.store(c, false)
	if err != nil {
		return err
	}
	name := c.Param("name")
	body, err := io.ReadAll(c.Request().Body)
	var ae *apiError
	if errors.As(err, &ae) { // a body too slow (limits.go)
		return err
	}
	if err != nil {
		return badRequest("read the request body: %v", err)
	}
	sess, err := s.toolSession(c, cl, tooladapter.Attachment{Store: st})
	if err != nil {
		return err
	}
	res, err := sess.Call(c.Request().Context(), name, body)
	if tooladapter.IsUnknownTool(err) {
		return &apiError{status: http.StatusNotFound, typ: "not_found_error", message: err.Error()}
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toolResultJSON{Type: "tool_result", Content: res.Content, IsError: res.IsError})
}

// toolSession binds the tools to stores for one request's caller: a read_only key sees
// every store read-only whatever the attachment asks, and writes are recorded as the
// caller's actor (its key, or the session it names). With ?at= (a time or a commit) the
// tools read the stores as they were then, and change nothing.
func (s *Server) toolSession(c echo.Context, cl caller, stores ...tooladapter.Attachment) (*tooladapter.Session, error) {
	readOnlyKey := cl.key != nil && cl.key.Access == apikeys.ReadOnly
	for i := range stores {
		switch {
		case readOnlyKey:
			stores[i].Access = tooladapter.ReadOnly
		case (cl.proposes() || stores[i].Access == tooladapter.Propose) && c.QueryParam("at") == "":
			// A propose key's tools, or a store attached to propose, work on the caller's
			// proposal: its writes go there.
			if err := cl.checkStore(stores[i].Store.ID()); err != nil {
				return nil, err
			}
			// Its own changes, read; a proposal opens at the session's first change (past
			// the bounds of open proposals, the change is refused with the reason).
			f, opening, err := s.props.Session(stores[i].Store, cl.actor, proposalTitle(cl))
			if err != nil {
				return nil, err
			}
			if stores[i].Access == tooladapter.ReadOnly {
				stores[i].Store = f
				continue
			}
			stores[i].Store, stores[i].Access = f, tooladapter.Propose
			if opening != nil { // not a nil *Opening in the interface
				stores[i].Proposal = opening
			}
		}
	}
	opts := tooladapter.Options{Actor: &cl.actor, Search: s.search, ID: cl.actor.SessionID(), Stores: stores, At: c.QueryParam("at"), Stop: s.closing}
	return tooladapter.NewSession(c.Request().Context(), opts)
}
