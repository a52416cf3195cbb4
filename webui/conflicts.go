package webui

import (
	"context"
	"net/http"
	"regexp"

	"github.com/gitmem/gitmem/gitstore"
)

// A sync that finds a memory changed on both sides in overlapping ways keeps the remote's
// at the path and puts this store's beside it, at /a/b.conflict-<commit>.md (gitstore's
// merger names it). The conflicts page lists those copies, and resolves each one with the
// same store operations as the API: keep the remote's (delete the copy), or keep the copy's
// (its content replaces the remote's, or takes the path back if the remote deleted it).

var conflictName = regexp.MustCompile(`^(.*)\.conflict-[0-9a-f]{7,40}(?:-[0-9]+)?(\.[^./]*)?$`)

// conflictOriginal is the path that a conflict copy stands beside, or "" if p is not one.
func conflictOriginal(p string) string {
	m := conflictName.FindStringSubmatch(p)
	if m == nil {
		return ""
	}
	return m[1] + m[2]
}

type conflict struct {
	Copy     gitstore.Memory
	Path     string           // the path the copy stands beside
	Original *gitstore.Memory // the memory at Path (the remote's), nil if there is none
}

type conflictsPage struct {
	Conflicts []conflict
	Scanned   int
	More      bool // the scan stopped at its bound
}

// conflictScanBound bounds how many memories one conflicts page looks through.
const conflictScanBound = 100_000

func (u *UI) conflicts(w http.ResponseWriter, r *http.Request, q *request) error {
	ctx := r.Context()
	var page conflictsPage
	cursor := ""
	for {
		p, err := q.store.List(ctx, gitstore.ListOptions{Limit: 1000, Cursor: cursor})
		if err != nil {
			return err
		}
		for _, it := range p.Items {
			page.Scanned++
			if it.Memory == nil {
				continue
			}
			if orig := conflictOriginal(it.Memory.Path); orig != "" {
				c, err := u.conflictOf(ctx, q, *it.Memory, orig)
				if err != nil {
					return err
				}
				page.Conflicts = append(page.Conflicts, c)
			}
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
		if page.Scanned >= conflictScanBound {
			page.More = true
			break
		}
	}
	u.render(w, r, q, http.StatusOK, "conflicts", page)
	return nil
}

func (u *UI) conflictOf(ctx context.Context, q *request, cp gitstore.Memory, orig string) (conflict, error) {
	c := conflict{Path: orig}
	copyMem, err := q.store.Get(ctx, cp.ID, true)
	if err != nil {
		return c, err
	}
	c.Copy = copyMem
	m, err := q.store.GetByPath(ctx, orig, true)
	switch {
	case err == nil:
		c.Original = &m
	case !gitstore.IsKind(err, gitstore.KindNotFound):
		return c, err
	}
	return c, nil
}

// resolveConflict keeps one side of the conflict whose copy is memory id. Both writes carry
// the hashes the page showed, so a change made since is never overwritten unseen.
func (u *UI) resolveConflict(w http.ResponseWriter, r *http.Request, q *request) error {
	ctx := r.Context()
	copyMem, err := q.store.Get(ctx, r.PathValue("id"), true)
	if err != nil {
		return err
	}
	orig := conflictOriginal(copyMem.Path)
	if orig == "" {
		return badRequest(copyMem.Path + " is not a conflict copy")
	}
	if copyMem.ContentSHA256 != r.PostFormValue("copy_sha256") {
		return &pageError{status: http.StatusConflict, msg: "the conflict copy changed since the page was loaded: reload the conflicts and decide again"}
	}
	switch r.PostFormValue("keep") {
	case "remote":
	case "copy":
		if sha := r.PostFormValue("original_sha256"); sha != "" {
			_, err = q.store.Write(ctx, gitstore.WriteInput{Path: orig, Content: *copyMem.Content, Actor: q.caller.Actor,
				Precondition: &gitstore.Precondition{Type: gitstore.ContentSHA256, ContentSHA256: sha}})
		} else {
			// The remote deleted it: the copy takes its path back, as the memory it is.
			_, err = q.store.UpdateMemory(ctx, gitstore.UpdateInput{ID: copyMem.ID, Path: &orig, Actor: q.caller.Actor,
				Precondition: &gitstore.Precondition{Type: gitstore.ContentSHA256, ContentSHA256: copyMem.ContentSHA256}})
			if err != nil {
				return err
			}
			return redirect(w, r, q.storeURL("/conflicts"))
		}
		if err != nil {
			return err
		}
	default:
		return badRequest(`keep must be "remote" or "copy"`)
	}
	if _, err := q.store.Delete(ctx, gitstore.DeleteInput{ID: copyMem.ID, ExpectedSHA256: copyMem.ContentSHA256, Actor: q.caller.Actor}); err != nil {
		return err
	}
	return redirect(w, r, q.storeURL("/conflicts"))
}
