// Package mmap maps files read-only into memory and lets their pages go: the pack indexes
// and the catalog, whose pages would otherwise count in the process's resident memory for
// as long as it runs.
package mmap

import "errors"

// ErrNotMapped is Map's answer for a file it does not map: too small, too large for this
// system's address space, or a system where files are not mapped here.
var ErrNotMapped = errors.New("not mapped")
