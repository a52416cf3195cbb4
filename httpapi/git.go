package httpapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitserve"
	"github.com/gitmem/gitmem/gitstore"
)

// pushRetryAfter is the Retry-After, in seconds, of a push refused while its key has
// MaxPushesPerKey pushes being checked. A push of a few changed files is checked and answered
// in about a quarter of a second (docs/sharing.md), so one of those held is done within 1 s
// in the common case; a large push holds its place longer, and a retry then is refused
// alike. git does not retry; clients of their own that read Retry-After do.
const pushRetryAfter = 1

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
// route answers 501 (not implemented here) and EnableGit returns gitexec.ErrNoGit; the rest
// of the server works.
func (s *Server) EnableGit(opts GitOptions) error {
	layout := s.data.Layout()
	backend, err := gitserve.New(gitserve.Options{StoresDir: layout.StoresDir(),
		HooksDir: layout.HooksDir(), HookProgram: opts.HookProgram, Logger: s.log,
		MaxPushBytes: opts.MaxPushBytes})
	h := func(c echo.Context) error {
		if err != nil {
			return gitError(c, http.StatusNotImplemented, "%s", err.Error())
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

// serveGit answers one request of git's smart HTTP protocol: it finds the store and the
// caller, then has git http-backend answer (servePush for the pack of a push).
func (s *Server) serveGit(c echo.Context, backend *gitserve.Backend) error {
	req, err := parseGitRequest(c)
	if err != nil {
		return answerGit(c, err)
	}
	// /git/<name>.git is the store of that name. A name that names no store (or two) stays
	// as it is, so that the caller is asked for a key before it learns which names exist.
	if !strings.HasPrefix(req.StoreID, gitstore.StorePrefix) {
		if id, err := s.data.ResolveStore(c.Request().Context(), req.StoreID); err == nil {
			req.StoreID = id
		}
	}
	keyID, err := s.authorizeGit(c, &req)
	if err != nil {
		return answerGit(c, err)
	}
	st, err := s.data.Store(c.Request().Context(), req.StoreID)
	if gitstore.IsKind(err, gitstore.KindNotFound) {
		return gitError(c, http.StatusNotFound, "memory store %s not found", req.StoreID)
	}
	if err != nil {
		return err
	}
	if cl := callerOf(c); cl.proposes() {
		// Other keys' proposals are not its to read (the API refuses them too), nor to
		// push onto: git neither shows their branches to it nor lets it update them.
		own, others, err := s.props.Branches(st.ID(), cl.key.ID)
		if err != nil {
			return err
		}
		req.Proposals = &gitserve.ProposalBranches{Own: own, Others: others}
	}
	// Without this, net/http stops reading the request body once the response starts.
	if err := http.NewResponseController(c.Response()).EnableFullDuplex(); err != nil {
		s.log.Debug("git: full duplex", "err", err)
	}
	// In full duplex, net/http closes a body left unread (a refusal) after the handler, and
	// then reads the connection's next request while that close still reads: it panics and
	// drops the connection (golang/go#68560). Closed here, the body is done with first. An
	// answer written is sent before, as net/http sends it before it closes the body: the
	// close reads what is left of the body (up to 256 KB), which a client that waits to be
	// told to continue (Expect: 100-continue) sends only once it has given up waiting for
	// that answer.
	body := c.Request().Body
	defer func() {
		if c.Response().Committed {
			http.NewResponseController(c.Response()).Flush()
		}
		body.Close()
	}()
	if req.Push && c.Request().Method == http.MethodPost {
		release, held, ok := s.pushes.take(streamHolder(c), s.opts.Limits.MaxPushesPerKey, 0)
		if !ok {
			return answerGit(c, &gitRefusal{status: http.StatusTooManyRequests, retryAfter: pushRetryAfter,
				message: fmt.Sprintf("%s has %d git pushes being checked, the most one key may have at once "+
					"(gitmem serve --max-pushes-per-key): push again once one is done", streamHolder(c), held)})
		}
		defer release()
		// The hook's checks end in time for the answer to reach the pusher within the
		// request's time (limitRequests): git runs the hook, and nothing else stops it.
		req.Deadline = time.Now().Add(s.opts.Limits.GitTimeout * 9 / 10)
		// No push can have more branches' proposals open than the store holds.
		req.MaxBranches = s.opts.Limits.MaxOpenProposals
		return s.servePush(c, backend, req, st, keyID)
	}
	_, err = backend.Serve(c.Response(), c.Request(), req)
	return err
}

// gitRefusal is a git request answered with status and message, as plain text.
type gitRefusal struct {
	status  int
	message string
	// retryAfter, if above 0, is the answer's Retry-After in seconds (git itself does not
	// retry; a client of its own may).
	retryAfter int
}

func (e *gitRefusal) Error() string { return e.message }

func refuseGit(status int, format string, args ...any) error {
	return &gitRefusal{status: status, message: fmt.Sprintf(format, args...)}
}

// answerGit answers a refusal as git shows it; other errors go to the server's handler.
func answerGit(c echo.Context, err error) error {
	var r *gitRefusal
	if errors.As(err, &r) {
		if r.retryAfter > 0 {
			c.Response().Header().Set("Retry-After", strconv.Itoa(r.retryAfter))
		}
		return gitError(c, r.status, "%s", r.message)
	}
	return err
}

// parseGitRequest reads which store and which request of the smart HTTP protocol a
// request under /git/ is; anything else is refused.
func parseGitRequest(c echo.Context) (gitserve.Request, error) {
	r := c.Request()
	repo, rest, _ := strings.Cut(c.Param("*"), "/")
	req := gitserve.Request{StoreID: strings.TrimSuffix(repo, ".git"), Path: rest}
	switch {
	case rest == "info/refs" && r.Method == http.MethodGet:
		switch svc := r.URL.Query().Get("service"); svc {
		case "git-upload-pack":
		case "git-receive-pack":
			req.Push = true
		default:
			return req, refuseGit(http.StatusForbidden, "gitmem serves git's smart HTTP protocol only (git 1.6.6 or newer)")
		}
	case rest == "git-upload-pack" && r.Method == http.MethodPost:
	case rest == "git-receive-pack" && r.Method == http.MethodPost:
		req.Push = true
	default:
		return req, refuseGit(http.StatusNotFound, "not a git smart HTTP request: a store's repository is /git/{memstore_id}.git or /git/{name}.git")
	}
	return req, nil
}

// authorizeGit checks the caller's key against the request (the store, and a read_write
// key for a push), names the caller in req.RemoteUser and returns the key's id ("" without
// keys).
func (s *Server) authorizeGit(c echo.Context, req *gitserve.Request) (keyID string, err error) {
	r := c.Request()
	// The key is the basic auth password (any user name), as git sends it.
	_, secret, _ := r.BasicAuth()
	if secret == "" {
		secret = headerSecret(r)
	}
	cl, err := s.identify(r, secret, fmt.Sprintf("gitmem needs an API key: give it as the password (any user name), "+
		"e.g. git clone http://gitmem:KEY@host/git/%s.git, or from a credential helper", req.StoreID))
	if err != nil {
		ae := errorFor(err)
		if ae.status == http.StatusUnauthorized {
			// git asks its credential helper (or the terminal) on this challenge.
			c.Response().Header().Set("WWW-Authenticate", gitRealm)
			closeAfter(c)
		}
		if ae.status == http.StatusInternalServerError {
			return "", err
		}
		return "", refuseGit(ae.status, "%s", ae.message)
	}
	if err := s.limitRate(cl); err != nil { // ratelimit.go
		ae := errorFor(err)
		return "", &gitRefusal{status: ae.status, message: ae.message, retryAfter: ae.retryAfter}
	}
	if err := cl.checkStore(req.StoreID); err != nil {
		return "", refuseGit(http.StatusForbidden, "%s", errorFor(err).message)
	}
	if req.Push && cl.key != nil && cl.key.Access == apikeys.ReadOnly {
		return "", refuseGit(http.StatusForbidden, "this API key (%s) is read_only: it may clone and fetch, but a push needs a read_write key (or a propose key, to a proposal branch)", cl.key.ID)
	}
	c.Set(callerKey, cl) // servePush names the pusher of a proposal branch
	req.RemoteUser = cl.actor.ID
	if cl.key != nil {
		req.Access = string(cl.key.Access)
	}
	if cl.key != nil {
		keyID = cl.key.ID
	}
	return keyID, nil
}

// proposeBranches opens (or updates) the proposal of each proposal branch that this push
// moved (pushed: each with its move, as the hook accepted it): its commits, which the hook
// checked as it checks main's, are the proposal's changes. A branch that is not at the
// pushed commit now was moved by another push, or git did not move it: not this push's.
func (s *Server) proposeBranches(ctx context.Context, c echo.Context, st *gitstore.Store, pushed map[string]gitserve.Move) {
	after, err := st.Branches(ctx, gitstore.ProposalBranches)
	if err != nil {
		s.log.Error("git push: list the proposal branches", "store", st.ID(), "err", err)
		return
	}
	cl := callerOf(c)
	for ref, m := range pushed {
		if after[ref] != m.To || m.From == m.To {
			continue
		}
		who := "the local user"
		if cl.key != nil {
			who = fmt.Sprintf("key %q", cl.key.Name)
		}
		title := fmt.Sprintf("Branch %s pushed by %s", strings.TrimPrefix(ref, gitstore.ProposalBranches), who)
		if _, err := s.props.FromBranch(ctx, st, ref, cl.actor, title); err != nil {
			s.log.Error("git push: open the proposal of a branch", "store", st.ID(), "branch", ref, "err", err)
			// No proposal holds what the push brought (pushes at once took the room): the
			// branch goes back to where it was, or away if new, so that no branch keeps
			// commits that nothing reviews.
			if err := st.UndoBranch(ctx, ref, m.From, m.To); err != nil {
				s.log.Error("git push: undo a proposal branch's push that opened no proposal", "store", st.ID(), "branch", ref, "err", err)
			}
		}
	}
}

// refuseRewritten refuses a push that brings back commits that a redaction rewrote: a clone
// made before the redaction that merged the store's new history (git pull) and pushed would
// put the redacted content back into main, or into a proposal for review.
func refuseRewritten(ctx context.Context, st *gitstore.Store, commits []string) error {
	h, rewritten, err := st.FirstRewritten(ctx, commits)
	if err != nil || !rewritten {
		return err
	}
	return gitserve.Refusal(fmt.Sprintf("commit %s is history from before a redaction, which would bring the redacted content back: "+
		"run git fetch and git reset --hard origin/main (your unpushed commits are lost), or clone again", h[:min(len(h), 12)]))
}

// killedPushHold is how long a push's new name stays held after its request ended with git
// killed (gitserve.Served.Killed): git may still move main meanwhile, after the hook
// accepted the push, which takes it milliseconds (seconds if main.lock is busy).
const killedPushHold = time.Minute

// servePush runs the pack of a push. The hook checks it and asks the store to record the
// pushing key (Store.ReceivePush) before git moves main: a push whose key cannot be recorded
// is refused. A push that renames the store holds the new name from its check until git is
// done (gitstore.ReserveName), so that nothing else takes it before main shows it. Once git
// is done, the catalog and the search index catch up before the response ends, so that the
// push returns when the API and search show it.
func (s *Server) servePush(c echo.Context, backend *gitserve.Backend, req gitserve.Request, st *gitstore.Store, keyID string) error {
	// hold and pushed are set by Accept, which has returned when Serve does.
	var hold *gitstore.NameHold
	var pushed map[string]gitserve.Move
	var served gitserve.Served
	defer func() {
		if served.Accepted && served.Killed {
			hold.ReleaseAfter(killedPushHold)
		} else {
			// Refused, or git is done: main has the name if it ever will.
			hold.Release()
		}
	}()
	req.Accept = func(ctx context.Context, p gitserve.Push) error {
		if err := refuseRewritten(ctx, st, append(p.Commits, p.Proposed...)); err != nil {
			return err
		}
		// A new proposal branch past the bounds of open proposals is refused before git
		// makes it: one without a proposal would hold its commits with nothing to review.
		if len(p.Branches) > 0 {
			if err := s.props.RoomForBranches(st.ID(), callerOf(c).actor, slices.Collect(maps.Keys(p.Branches))); err != nil {
				return gitserve.Refusal(errorFor(err).message)
			}
		}
		pushed = p.Branches
		// The rules first, then the record of the key: a refused push records nothing.
		if p.Rename != "" {
			h, err := s.data.ReserveName(ctx, p.Rename, st.ID())
			if err != nil {
				return gitserve.Refusal(fmt.Sprintf("/%s: %s", gitstore.StoreFile, errorFor(err).message))
			}
			hold = h
		}
		err := st.ReceivePush(ctx, p.Commits, keyID)
		if err == nil {
			s.log.Debug("git push accepted", "store", req.StoreID, "commits", len(p.Commits), "key", keyID)
			return nil
		}
		ae := errorFor(err)
		if ae.status == http.StatusInternalServerError {
			s.log.Error("git push: record the key", "store", req.StoreID, "err", err)
		}
		return errors.New(ae.message)
	}
	served, err := backend.Serve(c.Response(), c.Request(), req)
	if err != nil || !served.Accepted {
		return err
	}
	s.proposeBranches(context.WithoutCancel(c.Request().Context()), c, st, pushed)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), time.Minute)
	defer cancel()
	if err := st.Refresh(ctx); err != nil {
		// The push is in main, with its key: reads catch up on their own.
		s.log.Error("git push: catch the catalog up", "store", req.StoreID, "err", err)
		return nil
	}
	if s.search != nil {
		if err := s.search.CatchUp(ctx, req.StoreID); err != nil && !errors.Is(err, context.Canceled) {
			s.log.Warn("git push: catch the search index up", "store", req.StoreID, "err", err)
		}
	}
	return nil
}
