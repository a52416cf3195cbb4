package httpapi

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/gitstore"
)

// memoryReader answers memory reads: the store as it is, or a snapshot of it.
type memoryReader interface {
	Get(ctx context.Context, id string, withContent bool) (gitstore.Memory, error)
	List(ctx context.Context, opts gitstore.ListOptions) (gitstore.ListPage, error)
}

// reader returns what the memory GET routes read: the store, or with the query parameter
// at (a gitmem extension: an RFC 3339 time or a commit hash) the store as it was then.
func reader(c echo.Context, st *gitstore.Store) (memoryReader, error) {
	at := c.QueryParam("at")
	if at == "" {
		return st, nil
	}
	snap, err := st.At(c.Request().Context(), at) // a bad at is an invalid request (400)
	if err != nil {
		return nil, err
	}
	return snap, nil
}
