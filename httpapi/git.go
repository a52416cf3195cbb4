package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitserve"
	"github.com/gitmem/gitmem/gitstore"
)

// GitOptions configure EnableGit.
type GitOptions struct {
	// HookProgram is the program that checks pushes (see gitserve.Options); by default this
	// program, which must call gitserve.RunHookIfAsked first thing.
	HookProgram string
	// MaxPushBytes bounds the pack of one push (gitserve.DefaultMaxPushBytes if 0).
	MaxPushBytes int64
}

// EnableGit serves each store's repository over git's smart HTTP protocol at
// /git/{memstore_id}.git: git clone, fetch and pull, and git push checked by the rules of
// the store (docs/git.md). The key is the HTTP basic password. If git is not installed the
// route answers 503 and EnableGit returns gitexec.ErrNoGit; the rest of the server works.
func (s *Server) EnableGit(opts GitOptions) error {
	layout := s.data.Layout()
	backend, err := gitserve.New(gitserve.Options{StoresDir: layout.StoresDir(),
		HooksDir: layout.HooksDir(), HookProgram: opts.HookProgram, Logger: s.log,
		MaxPushBytes: opts.MaxPushBytes})
	h := func(c echo.Context) error {
		if err != nil {
			return gitError(c, http.StatusServiceUnavailable, "%s", err.Error())
		}
		return s.serveGit(c, backend)
	}
	// No body limit and no compression here: packs are large, and git compresses them.
	s.e.Any("/git/*", h)
	return err
}

// gitError answers a git client in plain text, which git shows as "remote: ...".
func gitError(c echo.Context, status int, format string, args ...any) error {
	return c.String(status, fmt.Sprintf(format, args...)+"\n")
}

// gitRealm is the basic auth realm that git's credential helpers store keys under.
const gitRealm = `Basic realm="gitmem"`

func (s *Server) serveGit(c echo.Context, backend *gitserve.Backend) error {
	r := c.Request()
	repo, rest, _ := strings.Cut(c.Param("*"), "/")
	id := strings.TrimSuffix(repo, ".git")
	var push bool
	switch {
	case rest == "info/refs" && r.Method == http.MethodGet:
		switch svc := r.URL.Query().Get("service"); svc {
		case "git-upload-pack":
		case "git-receive-pack":
			push = true
		default:
			return gitError(c, http.StatusForbidden, "gitmem serves git's smart HTTP protocol only (git 1.6.6 or newer)")
		}
	case rest == "git-upload-pack" && r.Method == http.MethodPost:
	case rest == "git-receive-pack" && r.Method == http.MethodPost:
		push = true
	default:
		return gitError(c, http.StatusNotFound, "not a git smart HTTP request: a store's repository is /git/{memstore_id}.git")
	}

	// The key is the basic auth password (any user name), as git sends it.
	_, secret, _ := r.BasicAuth()
	if secret == "" {
		secret = headerSecret(r)
	}
	cl, err := s.identify(r, secret, fmt.Sprintf("gitmem needs an API key: give it as the password (any user name), "+
		"e.g. git clone http://gitmem:KEY@host/git/%s.git, or from a credential helper", id))
	if err != nil {
		ae := errorFor(err)
		if ae.status == http.StatusUnauthorized {
			// git asks its credential helper (or the terminal) on this challenge.
			c.Response().Header().Set("WWW-Authenticate", gitRealm)
			closeAfter(c)
		}
		if ae.status == http.StatusInternalServerError {
			return err
		}
		return gitError(c, ae.status, "%s", ae.message)
	}
	if err := cl.checkStore(id); err != nil {
		return gitError(c, http.StatusForbidden, "%s", errorFor(err).message)
	}
	if push && cl.key != nil && cl.key.Access == apikeys.ReadOnly {
		return gitError(c, http.StatusForbidden, "this API key (%s) is read_only: it may clone and fetch, but a push needs a read_write key", cl.key.ID)
	}
	st, err := s.data.Store(r.Context(), id)
	if gitstore.IsKind(err, gitstore.KindNotFound) {
		return gitError(c, http.StatusNotFound, "memory store %s not found", id)
	}
	if err != nil {
		return err
	}
	user := cl.actor.ID
	keyID := ""
	if cl.key != nil {
		keyID = cl.key.ID
	}
	// Without this, net/http stops reading the request body once the response starts.
	if err := http.NewResponseController(c.Response()).EnableFullDuplex(); err != nil {
		s.log.Debug("git: full duplex", "err", err)
	}
	req := gitserve.Request{StoreID: id, Path: rest, RemoteUser: user, Push: push}
	if !push || r.Method != http.MethodPost {
		backend.Serve(c.Response(), r, req)
		return nil
	}

	// A push: the hook lists the commits it accepted in a file; once git is done, the
	// catalog (and the search index) catch up before the response ends, so that the push
	// returns when the API shows it.
	report, err := os.CreateTemp("", "gitmem-push-")
	if err != nil {
		return err
	}
	report.Close()
	defer os.Remove(report.Name())
	req.Report = report.Name()
	mark := st.VersionMark()
	backend.Serve(c.Response(), r, req)
	raw, err := os.ReadFile(report.Name())
	if err != nil || len(raw) == 0 {
		return nil // refused, or nothing was pushed
	}
	commits := strings.Fields(string(raw))
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), time.Minute)
	defer cancel()
	n, err := st.AttributePush(ctx, mark, commits, keyID)
	if err != nil {
		s.log.Error("git push: catch the catalog up", "store", id, "err", err)
		return nil
	}
	s.log.Debug("git push", "store", id, "commits", len(commits), "versions_attributed", n, "key", keyID)
	if s.search != nil {
		if err := s.search.CatchUp(ctx, id); err != nil && !errors.Is(err, context.Canceled) {
			s.log.Warn("git push: catch the search index up", "store", id, "err", err)
		}
	}
	return nil
}
