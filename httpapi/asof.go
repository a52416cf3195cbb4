package httpapi

import (
	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/gitstore"
)

// reader returns what the memory GET routes read: the store, or with the query parameter
// at (a gitmem extension: an RFC 3339 time or a commit hash) the store as it was then. A bad
// at is an invalid request (400).
func reader(c echo.Context, st *gitstore.Store) (gitstore.MemoryReader, error) {
	return st.ReaderAt(c.Request().Context(), c.QueryParam("at"))
}
