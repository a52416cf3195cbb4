package webui

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gitmem/gitmem/gitstore"
)

type memoryPage struct {
	Memory gitstore.Memory
	Last   *gitstore.Version // the version that wrote it (nil when browsing the past)
	Raw    bool
	// Deleted: the memory is gone now; Latest is its last version.
	Deleted bool
	Latest  *gitstore.Version
}

func (u *UI) memory(w http.ResponseWriter, r *http.Request, q *request) error {
	ctx := r.Context()
	qs := r.URL.Query()
	id := r.PathValue("id")
	page := memoryPage{Raw: qs.Get("view") == "raw"}
	mr, err := q.store.ReaderAt(ctx, qs.Get("at"))
	if err != nil {
		return err
	}
	page.Memory, err = mr.Get(ctx, id, true)
	if gitstore.IsKind(err, gitstore.KindNotFound) && qs.Get("at") == "" {
		// Gone now: its history may still be there, and it can be restored from it.
		vs, verr := q.store.Versions(ctx, gitstore.VersionFilter{MemoryID: id, Limit: 1})
		if verr == nil && len(vs.Versions) == 1 {
			page.Deleted, page.Latest = true, &vs.Versions[0]
			page.Memory = gitstore.Memory{ID: id, Path: vs.Versions[0].Path}
			u.render(w, r, q, http.StatusOK, "memory", page)
			return nil
		}
	}
	if err != nil {
		return err
	}
	if qs.Get("at") == "" {
		v, err := q.store.Version(ctx, page.Memory.VersionID, false)
		if err != nil {
			return err
		}
		page.Last = &v
	}
	u.render(w, r, q, http.StatusOK, "memory", page)
	return nil
}

// editPage is the form to edit or create a memory, again with what was typed when the
// store refused it. Theirs is set when someone else changed the memory since the form was
// loaded: both sides and their diff are shown, and nothing was written.
type editPage struct {
	New     bool
	ID      string
	Path    string
	Content string
	SHA256  string // the content the edit started from: the precondition of the save
	Error   string
	Theirs  *gitstore.Memory
	Diff    []diffRow
}

func (u *UI) editForm(w http.ResponseWriter, r *http.Request, q *request) error {
	m, err := q.store.Get(r.Context(), r.PathValue("id"), true)
	if err != nil {
		return err
	}
	u.render(w, r, q, http.StatusOK, "edit", editPage{ID: m.ID, Path: m.Path, Content: *m.Content, SHA256: m.ContentSHA256})
	return nil
}

func (u *UI) newMemoryForm(w http.ResponseWriter, r *http.Request, q *request) error {
	prefix := r.URL.Query().Get("prefix")
	if !strings.HasPrefix(prefix, "/") {
		prefix = "/"
	}
	u.render(w, r, q, http.StatusOK, "edit", editPage{New: true, Path: prefix})
	return nil
}

func (u *UI) createMemory(w http.ResponseWriter, r *http.Request, q *request) error {
	page := editPage{New: true, Path: strings.TrimSpace(r.PostFormValue("path")), Content: formText(r, "content")}
	res, err := q.store.Write(r.Context(), gitstore.WriteInput{Path: page.Path, Content: page.Content,
		Precondition: &gitstore.Precondition{Type: gitstore.NotExists}, Actor: q.caller.Actor})
	if err != nil {
		return u.refused(w, r, q, page, err)
	}
	return redirect(w, r, q.storeURL("/memories/"+res.Memory.ID))
}

func (u *UI) saveMemory(w http.ResponseWriter, r *http.Request, q *request) error {
	ctx := r.Context()
	page := editPage{ID: r.PathValue("id"), Path: strings.TrimSpace(r.PostFormValue("path")),
		Content: formText(r, "content"), SHA256: r.PostFormValue("sha256")}
	if err := gitstore.ValidateSHA256("sha256", page.SHA256); err != nil {
		return badRequest("the form lacks the hash of the content it started from; reload the memory and edit it again")
	}
	in := gitstore.UpdateInput{ID: page.ID, Content: &page.Content, Actor: q.caller.Actor,
		Precondition: &gitstore.Precondition{Type: gitstore.ContentSHA256, ContentSHA256: page.SHA256}}
	if page.Path != r.PostFormValue("from_path") {
		in.Path = &page.Path
	}
	_, err := q.store.UpdateMemory(ctx, in)
	if gitstore.IsKind(err, gitstore.KindPreconditionFailed) {
		// Changed meanwhile: show theirs beside ours, and write nothing. Saving again
		// takes theirs as the base, so it is a decision made having seen it.
		theirs, gerr := q.store.Get(ctx, page.ID, true)
		if gerr != nil {
			return gerr
		}
		page.Theirs = &theirs
		page.Diff = splitRows(gitstore.UnifiedDiff("a"+theirs.Path, "b"+page.Path, *theirs.Content, page.Content))
	}
	if err != nil {
		return u.refused(w, r, q, page, err)
	}
	return redirect(w, r, q.storeURL("/memories/"+page.ID))
}

// refused shows the edit form again with what was typed and why the store refused it.
func (u *UI) refused(w http.ResponseWriter, r *http.Request, q *request, page editPage, err error) error {
	var ge *gitstore.Error
	if !errors.As(err, &ge) || gitstore.ErrorKind(err) == gitstore.KindUnavailable || gitstore.ErrorKind(err) == gitstore.KindStorage {
		return err
	}
	status, msg := statusOf(err)
	page.Error = msg
	u.render(w, r, q, status, "edit", page)
	return nil
}

func (u *UI) deleteMemory(w http.ResponseWriter, r *http.Request, q *request) error {
	sha := r.PostFormValue("sha256")
	if err := gitstore.ValidateSHA256("sha256", sha); err != nil {
		return badRequest("the form lacks the hash of the content it shows; reload the memory and delete it again")
	}
	v, err := q.store.Delete(r.Context(), gitstore.DeleteInput{ID: r.PathValue("id"), ExpectedSHA256: sha, Actor: q.caller.Actor})
	if err != nil {
		return err
	}
	return redirect(w, r, q.storeURL("?prefix="+queryEscape(parentOf(v.Path))))
}
