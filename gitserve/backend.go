// Package gitserve serves a data directory's store repositories over git's smart HTTP
// protocol by running `git http-backend` as a CGI program, and checks pushes with a
// pre-receive hook that is this same program (see RunHookIfAsked and docs/git.md).
//
// It knows nothing of API keys: the caller (httpapi) authenticates, says whether the
// request may push, and accepts a checked push before git moves main (Request.Accept).
package gitserve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cgi"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/durable"
	"github.com/gitmem/gitmem/internal/gitexec"
)

// Options configure a Backend.
type Options struct {
	// StoresDir holds the bare repositories, <memstore_id>.git (GIT_PROJECT_ROOT).
	StoresDir string
	// HooksDir is where New writes the pre-receive hook (core.hooksPath); it is rewritten
	// at each start.
	HooksDir string
	// HookProgram is the program the hook runs, with GITMEM_GIT_HOOK=pre-receive in its
	// environment: a program that calls RunHookIfAsked first. Default: os.Executable().
	HookProgram string
	// Logger receives what git writes on stderr.
	Logger *slog.Logger
	// MaxPushBytes bounds the pack that one push may send (receive.maxInputSize);
	// DefaultMaxPushBytes if 0.
	MaxPushBytes int64
}

// DefaultMaxPushBytes is the largest pack a push may send: 256 MiB. A memory holds at most
// 100 KiB (gitstore.MaxContentBytes), so this is at least 2,600 memories of the largest size
// and tens of thousands of typical ones in one push; the hook checks and the catalog
// applies a push in one go, so a history larger than that comes in by "gitmem import" or
// by several pushes.
const DefaultMaxPushBytes = 256 << 20

// Backend runs git http-backend for the repositories of one data directory.
type Backend struct {
	git  string
	opts Options
}

// New finds git and git http-backend and writes the hook. Its error is gitexec.ErrNoGit if
// git is not installed.
func New(opts Options) (*Backend, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxPushBytes <= 0 {
		opts.MaxPushBytes = DefaultMaxPushBytes
	}
	// git runs in StoresDir: every path it is given must be absolute.
	var err error
	if opts.StoresDir, err = filepath.Abs(opts.StoresDir); err != nil {
		return nil, err
	}
	if opts.HooksDir, err = filepath.Abs(opts.HooksDir); err != nil {
		return nil, err
	}
	git, err := gitexec.Path()
	if err != nil {
		return nil, gitexec.NoGit("git over HTTP is off because git is not installed (no git program in PATH)")
	}
	out, err := gitexec.Command(context.Background(), "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("git over HTTP is off: git --exec-path failed: %w", err)
	}
	if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")); err != nil {
		return nil, fmt.Errorf("git over HTTP is off because this git has no http-backend (%w)", err)
	}
	if opts.HookProgram == "" {
		if opts.HookProgram, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("git over HTTP is off: cannot find this program for the push hook: %w", err)
		}
	}
	if err := writeHook(opts.HooksDir, opts.HookProgram); err != nil {
		return nil, err
	}
	return &Backend{git: git, opts: opts}, nil
}

// writeHook writes HooksDir/pre-receive: a script that runs the program as the hook.
func writeHook(dir, program string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write git hook: %w", err)
	}
	quoted := "'" + strings.ReplaceAll(program, "'", `'\''`) + "'"
	script := "#!/bin/sh\n# Written by gitmem serve at each start: gitmem checks every push to a store.\n" +
		hookEnv + "=pre-receive\nexport " + hookEnv + "\nexec " + quoted + " \"$@\"\n"
	if err := durable.WriteFile(filepath.Join(dir, "pre-receive"), []byte(script), 0o755); err != nil {
		return fmt.Errorf("write git hook: %w", err)
	}
	return nil
}

// Request is one smart HTTP request for a store's repository, already authorized.
type Request struct {
	StoreID string
	// Path is what follows /<memstore_id>.git/: info/refs, git-upload-pack or
	// git-receive-pack.
	Path string
	// RemoteUser names the caller for git (REMOTE_USER): the API key id, or the local user.
	RemoteUser string
	// Push allows git-receive-pack.
	Push bool
	// Access is the caller's key's access (apikeys): a propose key's push may only update
	// proposal branches (refs/heads/proposals/NAME), which the hook checks.
	Access string
	// Proposals, if set, limits the proposal branches that the caller sees: a propose key's.
	Proposals *ProposalBranches
	// MaxBranches, if set, is the most proposal branches that one push may update: the open
	// proposals a store holds. The hook refuses more before it checks any.
	MaxBranches int
	// Deadline, if set, is when the hook gives up checking a push and refuses it, so that
	// a push that its checks would take longer over ends within the request's time.
	Deadline time.Time
	// Accept, if set, is asked to accept a push that passed the hook's checks, before git
	// moves main: if it fails, the push is refused with its error's message. It runs on its
	// own goroutine while Serve runs.
	Accept func(ctx context.Context, p Push) error
}

// ProposalBranches are the proposal branches (refs/heads/proposals/...) of a caller's view.
// Its fetches see its own and no others, also none that opens or is pushed while it runs
// (uploadpack.hideRefs on the whole folder, then its own unhidden). Its pushes neither see
// nor update Others (receive.hideRefs, by name: git refuses to create a ref under a hidden
// folder, and a push may make a new branch).
type ProposalBranches struct {
	Own, Others []string
}

// config is the git configuration that shows the caller only these branches.
func (p *ProposalBranches) config() [][2]string {
	if p == nil {
		return nil
	}
	// Protocol v0 (see Backend.env) serves no object by its hash, so a partial clone could
	// not fetch the blobs it left out: the caller's --filter is ignored, and it gets them all.
	cfg := [][2]string{{"uploadpack.allowFilter", "false"}, {"uploadpack.hideRefs", gitstore.ProposalBranches}}
	for _, ref := range p.Own {
		cfg = append(cfg, [2]string{"uploadpack.hideRefs", "!" + ref})
	}
	for _, ref := range p.Others {
		cfg = append(cfg, [2]string{"receive.hideRefs", ref})
	}
	return cfg
}

// Push is what a checked push does, as the hook tells the server.
type Push struct {
	// Commits are the commits that it adds to main, oldest first.
	Commits []string `json:"commits"`
	// Proposed are the commits that it adds to proposal branches.
	Proposed []string `json:"proposed,omitempty"`
	// Branches are the proposal branches that it creates or moves, each with its move.
	Branches map[string]Move `json:"branches,omitempty"`
	// Rename is the store's new name, if the push changes it in main's .gitmem/store.json:
	// names are unique among the data directory's stores, which only the server knows.
	Rename string `json:"rename,omitempty"`
}

// Move is how a push moves a branch: from commit From ("" for a new branch) to commit To.
type Move struct {
	From string `json:"from,omitempty"`
	To   string `json:"to"`
}

var protocolHeader = regexp.MustCompile(`^[A-Za-z0-9=:._,-]{1,256}$`)

// config is the git configuration of every request, passed in the environment
// (GIT_CONFIG_COUNT), so that it holds for repositories of any age and needs no file.
func (b *Backend) config(push bool) [][2]string {
	return [][2]string{
		{"core.hooksPath", b.opts.HooksDir},
		// go-git reads these repositories: git must never repack them behind its back.
		{"gc.auto", "0"},
		{"receive.autogc", "false"},
		{"core.logAllRefUpdates", "false"},
		// Pushed objects and the ref are durable before the push is answered.
		{"core.fsync", "objects,reference"},
		// The hook refuses these first, with a message; these hold if it did not run.
		{"receive.denyNonFastForwards", "true"},
		{"receive.denyDeletes", "true"},
		{"receive.fsckObjects", "true"},
		// git refuses a bigger pack with "pack exceeds maximum allowed size", which the
		// pusher sees as "remote: fatal: ...".
		{"receive.maxInputSize", strconv.FormatInt(b.opts.MaxPushBytes, 10)},
		// gitmem's writer holds main.lock for a few milliseconds; wait for it.
		{"core.filesRefLockTimeout", "2000"},
		{"http.uploadpack", "true"},
		{"http.receivepack", strconv.FormatBool(push)},
		{"uploadpack.allowFilter", "true"},
	}
}

// Served is how Serve answered a request.
type Served struct {
	// Accepted says that Request.Accept accepted a push: it has recorded it, and main moved
	// to its commits unless git lost the race for main at the last step (the pusher is then
	// told so). Unless Killed, git is done: main is where it stays.
	Accepted bool
	// Killed says that an answer could not be written to the client (it went away), upon
	// which net/http/cgi kills git http-backend: the git receive-pack that it ran, and the
	// hook, may go on without it, and move main after Serve returns.
	Killed bool
}

// Serve answers one request by running git http-backend. With req.Accept set, it says
// whether a push was accepted. Its error is only for a socket that it could not make, before
// anything was answered.
func (b *Backend) Serve(w http.ResponseWriter, r *http.Request, req Request) (served Served, err error) {
	env := b.env(r, req)
	if req.Accept != nil {
		a, err := listenAccept(r.Context(), req.Accept)
		if err != nil {
			return Served{}, err
		}
		// After runCGI: close waits for Accept, if the hook called it.
		defer func() { served.Accepted = a.close() }()
		env = append(env, acceptEnv+"="+a.path())
	}
	cw := &cutWriter{ResponseWriter: w}
	b.runCGI(cw, r, req, env)
	return Served{Killed: cw.failed}, nil
}

// cutWriter notes that a write to the client failed: net/http/cgi then kills git
// http-backend (Served.Killed).
type cutWriter struct {
	http.ResponseWriter
	failed bool
}

func (w *cutWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if err != nil {
		w.failed = true
	}
	return n, err
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *cutWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// env is the environment of git http-backend for one request.
func (b *Backend) env(r *http.Request, req Request) []string {
	env := []string{
		"GIT_PROJECT_ROOT=" + b.opts.StoresDir,
		"GIT_HTTP_EXPORT_ALL=1",
		"PATH_INFO=/" + req.StoreID + ".git/" + req.Path,
		"REMOTE_USER=" + req.RemoteUser,
		storeEnv + "=" + req.StoreID,
		accessEnv + "=" + req.Access,
		gitexec.PathEnv + "=" + b.git,
	}
	if req.MaxBranches > 0 {
		env = append(env, maxBranchesEnv+"="+strconv.Itoa(req.MaxBranches))
	}
	if !req.Deadline.IsZero() {
		env = append(env, deadlineEnv+"="+strconv.FormatInt(req.Deadline.UnixMilli(), 10))
	}
	// A caller with a view of the proposal branches speaks git's protocol v0: v2's fetch
	// serves any object by its hash, hidden or not, where v0 serves only what it advertised.
	if p := r.Header.Get("Git-Protocol"); protocolHeader.MatchString(p) && req.Proposals == nil {
		env = append(env, "GIT_PROTOCOL="+p)
	}
	cfg := append(b.config(req.Push), req.Proposals.config()...)
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(cfg)))
	for i, kv := range cfg {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return env
}

// runCGI runs git http-backend as a CGI program for one request.
func (b *Backend) runCGI(w http.ResponseWriter, r *http.Request, req Request, env []string) {
	// The CGI environment gets every request header as HTTP_*: not the key.
	r = r.Clone(r.Context())
	r.Header.Del("Authorization")
	r.Header.Del("X-Api-Key")
	if req.Proposals != nil {
		// http-backend takes the protocol from HTTP_GIT_PROTOCOL too: v0 (see env).
		r.Header.Del("Git-Protocol")
	}
	// git sends a large push with a chunked body, which net/http/cgi refuses: hand the body
	// over without a length instead, and http-backend reads it to the end.
	if len(r.TransferEncoding) > 0 {
		r.TransferEncoding = nil
		r.ContentLength = -1
	}
	if req.Push {
		// git stops reading a push that it refuses early (receive.maxInputSize) while the
		// CGI handler still copies the body: close the connection after the answer instead
		// of reading the next request from it meanwhile.
		w.Header().Set("Connection", "close")
	}
	h := &cgi.Handler{
		Path:   b.git,
		Args:   []string{"http-backend"},
		Dir:    b.opts.StoresDir,
		Env:    gitexec.Env(env...),
		Stderr: logWriter{b.opts.Logger, req.StoreID},
	}
	h.ServeHTTP(w, r)
}

// logWriter logs what git writes on stderr.
type logWriter struct {
	log   *slog.Logger
	store string
}

func (l logWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" {
			l.log.Warn("git http-backend", "store", l.store, "stderr", line)
		}
	}
	return len(p), nil
}

var _ io.Writer = logWriter{}
