package main

import (
	"context"
	"strings"

	"github.com/gitmem/gitmem/gitstore"
)

// memoryReader is the store as it is, or a snapshot of it as of a time or commit.
type memoryReader interface {
	Get(ctx context.Context, id string, withContent bool) (gitstore.Memory, error)
	GetByPath(ctx context.Context, path string, withContent bool) (gitstore.Memory, error)
	List(ctx context.Context, opts gitstore.ListOptions) (gitstore.ListPage, error)
}

const atUsage = "read the store as of an RFC 3339 time (2025-01-02T15:04:05Z) or a commit hash (at least 7 hex digits)"

// readerAt returns s, or with at set the store as it was then.
func readerAt(ctx context.Context, s *gitstore.Store, at string) (memoryReader, error) {
	if at == "" {
		return s, nil
	}
	return s.At(ctx, at)
}

// getMemoryIn finds a memory by path, or by id for arguments that look like one.
func getMemoryIn(ctx context.Context, rd memoryReader, ref string) (gitstore.Memory, error) {
	if strings.HasPrefix(ref, gitstore.MemoryPrefix) {
		return rd.Get(ctx, ref, true)
	}
	return rd.GetByPath(ctx, ref, true)
}

// allMemoriesIn lists every memory that opts selects, page after page.
func allMemoriesIn(ctx context.Context, rd memoryReader, opts gitstore.ListOptions) ([]gitstore.ListItem, error) {
	opts.Limit = 1000
	return allPages(func(cursor string) ([]gitstore.ListItem, string, error) {
		opts.Cursor = cursor
		page, err := rd.List(ctx, opts)
		return page.Items, page.NextCursor, err
	})
}
