package tooladapter

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/gitmem/gitmem/gitstore"
)

// memoriesRoot is where the memory tool sees the session's stores.
const memoriesRoot = "/memories"

// target is a path of the tools resolved to a store: the root of the session when mount is
// nil (only with several stores), else path in mount's store ("" for the store's root).
type target struct {
	shown string // as the model wrote it; every message echoes it
	mount *mount
	path  string
}

func (t target) isSessionRoot() bool { return t.mount == nil }
func (t target) isStoreRoot() bool   { return t.mount != nil && t.path == "" }

// prefix is the listing prefix of the folder that t names ("" for a store's root).
func (t target) prefix() string {
	if t.path == "" {
		return ""
	}
	return t.path + "/"
}

// resolve maps a path under /memories to a store and a memory path. It refuses every path
// that does not name a place inside /memories plainly: outside it, "..", URL-encoded
// separators and dots, backslashes, control and format characters, non-NFC text.
func (s *Session) resolve(p string) (target, error) {
	t := target{shown: p}
	if !strings.HasPrefix(p, memoriesRoot) {
		return t, toolErrorf("Path must start with /memories, got: %s", p)
	}
	rest := p[len(memoriesRoot):]
	if rest != "" && rest[0] != '/' {
		return t, toolErrorf("Path must be /memories or start with /memories/, got: %s", p)
	}
	if strings.Contains(p, `\`) {
		return t, toolErrorf(`Path %s has a backslash (\); folders are separated by /`, p)
	}
	var segs []string
	depth, escapes := 0, false
	dotdot := false
	for _, seg := range strings.Split(rest, "/") {
		switch seg {
		case "", ".":
			continue
		case "..":
			dotdot = true
			if depth--; depth < 0 {
				escapes = true
			}
			continue
		}
		if strings.Contains(seg, "%") {
			if dec, err := url.PathUnescape(seg); err == nil && (dec == "." || dec == ".." || strings.ContainsAny(dec, `/\`)) {
				return t, toolErrorf("Path %s has a URL-encoded dot or separator in %q; paths are not URL-decoded, so name the path plainly", p, seg)
			}
		}
		depth++
		segs = append(segs, seg)
	}
	switch {
	case escapes:
		return t, toolErrorf("Path %s would escape /memories directory", p)
	case dotdot:
		return t, toolErrorf("Path %s has a .. segment; name the path without it", p)
	}
	if len(s.mounts) == 1 {
		t.mount = &s.mounts[0]
	} else if len(segs) > 0 {
		for i := range s.mounts {
			if s.mounts[i].slug == segs[0] {
				t.mount = &s.mounts[i]
			}
		}
		if t.mount == nil {
			return t, toolErrorf("The path %s does not exist: there is no memory store at /memories/%s. The stores are %s", p, segs[0], s.storeList())
		}
		segs = segs[1:]
	}
	if len(segs) > 0 {
		t.path = "/" + strings.Join(segs, "/")
		if err := gitstore.ValidatePath(t.path); err != nil {
			return t, toolErrorf("Invalid path %q: %s", p, storeMessage(err))
		}
	}
	return t, nil
}

// storeList names the folders of the session's stores, for messages.
func (s *Session) storeList() string {
	roots := make([]string, len(s.mounts))
	for i, m := range s.mounts {
		roots[i] = m.root() + "/"
	}
	return strings.Join(roots, ", ")
}

// storeMessage returns the message of a store error that may be shown.
func storeMessage(err error) string {
	var e *gitstore.Error
	if errors.As(err, &e) && e.Kind != gitstore.KindInternal {
		return e.Message
	}
	return err.Error()
}

// shownPath turns a memory path of a mount back into the tools' namespace.
func (m *mount) shownPath(storePath string) string {
	return m.root() + storePath
}

// describe names a mount for messages.
func (m *mount) describe() string {
	return fmt.Sprintf("%q (%s)", m.info.Name, m.info.ID)
}
