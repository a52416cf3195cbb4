package main

import (
	"context"
	"strings"

	"github.com/gitmem/gitmem/gitstore"
)

const atUsage = "read the store as of a time (2026-01-02T15:04:05Z, 2026-01-02, today, yesterday, 1h, 2d) or a commit hash (at least 7 hex digits)"

// getMemoryIn finds a memory by path, or by id for arguments that look like one.
func getMemoryIn(ctx context.Context, rd gitstore.MemoryReader, ref string) (gitstore.Memory, error) {
	if strings.HasPrefix(ref, gitstore.MemoryPrefix) {
		return rd.Get(ctx, ref, true)
	}
	return rd.GetByPath(ctx, ref, true)
}
