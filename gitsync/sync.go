package gitsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gitmem/gitmem/gitserve"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/english"
	"github.com/gitmem/gitmem/internal/gitexec"
)

// ErrRejected is a push that the remote refused because its main moved meanwhile (another
// replica pushed): fetch and merge again.
var ErrRejected = errors.New("the remote refused the push: its main moved meanwhile")

// maxRounds bounds how often Sync fetches and merges again after its push was refused
// because another replica pushed first.
const maxRounds = 5

// Result is what one sync with one remote did.
type Result struct {
	Remote string `json:"remote"`
	// Empty is set when the remote had no main yet: the push created it.
	Empty bool `json:"empty,omitempty"`
	gitstore.MergeResult
	Pushed     bool   `json:"pushed"`
	RemoteHead string `json:"remote_head"` // the remote's main after the sync
	Rounds     int    `json:"rounds"`      // fetch-merge-push rounds; more than 1 if another replica pushed meanwhile
	// Replaced is set when the remote's main was the history from before a redaction here,
	// and was force-pushed over with the redacted history.
	Replaced bool `json:"replaced,omitempty"`
	// Redacted lists the versions that the remote records as redacted and that were
	// redacted here too, before the merge.
	Redacted []string `json:"redacted,omitempty"`
}

// Summary says in one line what the sync did.
func (r Result) Summary() string {
	var parts []string
	if r.Replaced {
		return "the remote had the history from before a redaction here; replaced it (force-push) with main " + short(r.RemoteHead)
	}
	if n := len(r.Redacted); n > 0 {
		parts = append(parts, "redacted "+english.Count(n, "version")+" as the remote did ("+strings.Join(r.Redacted, ", ")+")")
	}
	switch {
	case r.Empty:
		parts = append(parts, "the remote was empty")
	case r.Fetched > 0:
		parts = append(parts, fmt.Sprintf("fetched %s", english.Count(r.Fetched, "commit")))
	default:
		parts = append(parts, "fetched nothing new")
	}
	switch r.Outcome {
	case gitstore.FastForward:
		parts = append(parts, "fast-forwarded main to "+short(r.After))
	case gitstore.Merged:
		m := "merged (" + short(r.After) + ")"
		if n := len(r.TextMerged); n > 0 {
			m += fmt.Sprintf(", %d merged as text", n)
		}
		if n := len(r.Kept); n > 0 {
			m += fmt.Sprintf(", %d kept (deleted on one side, changed on the other)", n)
		}
		if n := len(r.Conflicts); n > 0 {
			m += ", " + english.Count(n, "conflict")
		}
		parts = append(parts, m)
	}
	if r.Pushed {
		parts = append(parts, "pushed main "+short(r.RemoteHead))
	} else {
		parts = append(parts, "nothing to push")
	}
	return strings.Join(parts, "; ")
}

func short(h string) string {
	if len(h) > 7 {
		return h[:7]
	}
	return h
}

// Syncer syncs the stores of one data directory with their remotes.
type Syncer struct {
	DataDir string // the data directory's path, where remotes/ is
	// Now is the clock of the sync state; time.Now if nil.
	Now func() time.Time
	// Observe, if set, is told how each sync with a remote went (for metrics).
	Observe func(storeID string, res Result, err error)

	mu sync.Mutex // guards the read-modify-write of state files

	storesMu sync.Mutex             // guards stores
	stores   map[string]*sync.Mutex // by store id: one sync of a store at a time (the loop's, a request's)
}

// storeLock is the lock that one store's syncs take.
func (y *Syncer) storeLock(id string) *sync.Mutex {
	y.storesMu.Lock()
	defer y.storesMu.Unlock()
	if y.stores == nil {
		y.stores = map[string]*sync.Mutex{}
	}
	if y.stores[id] == nil {
		y.stores[id] = &sync.Mutex{}
	}
	return y.stores[id]
}

func (y *Syncer) now() time.Time {
	if y.Now != nil {
		return y.Now().UTC()
	}
	return time.Now().UTC()
}

// Sync fetches the remote's main, integrates it into the store's main (a fast-forward or a
// merge, gitstore.Store.Integrate) and pushes main if the remote lacks it. If the push is
// refused because another replica pushed meanwhile, it fetches and merges again, a few
// times. It records the outcome in the store's sync state. Syncs of one store wait for each
// other, so the server's loop and a sync that a request asked for never overlap.
func (y *Syncer) Sync(ctx context.Context, s *gitstore.Store, r Remote) (Result, error) {
	l := y.storeLock(s.ID())
	l.Lock()
	defer l.Unlock()
	res, err := y.sync(ctx, s, r)
	if rerr := y.record(s.ID(), r.Name, res, err); err == nil {
		err = rerr
	}
	return res, err
}

// SyncRemotes syncs s with its remotes, or with the one named name (Pick), one after
// another: what each sync did, and an error ("sync with NAME: ...") for each remote whose
// sync failed. gitmem sync and the server's POST .../sync both run it.
func (y *Syncer) SyncRemotes(ctx context.Context, s *gitstore.Store, name string) ([]Result, []error, error) {
	ref := s.ID()
	if info, err := s.Info(ctx); err == nil && info.Name != "" {
		ref = info.Name
		if strings.ContainsAny(ref, " \t\"'\\$`") {
			ref = strconv.Quote(ref)
		}
	}
	remotes, err := Pick(y.DataDir, s.ID(), ref, name)
	if err != nil {
		return nil, nil, err
	}
	results := []Result{}
	var failed []error
	for _, r := range remotes {
		res, err := y.Sync(ctx, s, r)
		if y.Observe != nil {
			y.Observe(s.ID(), res, err)
		}
		if err != nil {
			failed = append(failed, fmt.Errorf("sync with %s: %w", r.Name, err))
			continue
		}
		results = append(results, res)
	}
	return results, failed, nil
}

func (y *Syncer) sync(ctx context.Context, s *gitstore.Store, r Remote) (Result, error) {
	res := Result{Remote: r.Name}
	g, err := newGit(s.RepoPath())
	if err != nil {
		return res, err
	}
	var fetched int
	for res.Rounds = 1; ; res.Rounds++ {
		if replaced, err := g.replaceRewritten(ctx, s, r); err != nil || replaced != "" {
			res.Replaced, res.Pushed, res.RemoteHead = replaced != "", err == nil, s.Head()
			return res, err
		}
		head, empty, err := g.fetch(ctx, r)
		if err != nil {
			return res, err
		}
		res.Empty = empty
		main := s.Head()
		if !empty {
			redacted, err := g.takeRedactions(ctx, s, head)
			res.Redacted = append(res.Redacted, redacted...)
			if err != nil {
				return res, fmt.Errorf("%s/main: %w", r.Name, err)
			}
			if err := g.check(ctx, s, head); err != nil {
				return res, fmt.Errorf("%s/main: %w", r.Name, err)
			}
			m, err := s.Integrate(ctx, r.Name, head)
			if err != nil {
				return res, fmt.Errorf("merge %s/main: %w", r.Name, err)
			}
			fetched += m.Fetched
			res.MergeResult = m
			main = m.After
			if m.Outcome == gitstore.UpToDate || m.Outcome == gitstore.FastForward {
				res.Fetched, res.RemoteHead = fetched, head
				return res, nil
			}
		}
		err = g.push(ctx, r, main)
		if errors.Is(err, ErrRejected) && res.Rounds < maxRounds {
			continue
		}
		if err != nil {
			return res, err
		}
		res.Fetched, res.Pushed, res.RemoteHead = fetched, true, main
		return res, nil
	}
}

// Backoff is how long the loop waits before it tries a remote again after failures syncs
// in a row failed: 5s, 10s, 20s, ... up to 10 minutes.
func Backoff(failures int) time.Duration {
	d := 5 * time.Second
	for i := 1; i < failures && d < 10*time.Minute; i++ {
		d *= 2
	}
	return min(d, 10*time.Minute)
}

// record writes the outcome of a sync into the store's sync state.
func (y *Syncer) record(storeID, remote string, res Result, err error) error {
	y.mu.Lock()
	defer y.mu.Unlock()
	states, rerr := States(y.DataDir, storeID)
	if rerr != nil {
		states = map[string]State{}
	}
	st := states[remote]
	now := y.now()
	st.LastTry = now
	if err != nil {
		st.Failures++
		st.LastError = err.Error()
		st.NextTry = now.Add(Backoff(st.Failures))
	} else {
		st.Failures, st.LastError, st.NextTry = 0, "", time.Time{}
		st.LastSync, st.RemoteHead, st.Summary = now, res.RemoteHead, res.Summary()
	}
	states[remote] = st
	if err := writeJSON(statePath(y.DataDir, storeID), states); err != nil {
		return fmt.Errorf("record the sync state: %w", err)
	}
	return nil
}

// trackingRef keeps the remote's main as last fetched or pushed: the merge needs its
// objects, and gc keeps what a ref names.
func trackingRef(remote string) string { return "refs/remotes/" + remote + "/main" }

// gitCmd runs the git program on a store's repository, never prompting.
type gitCmd struct {
	repo string
	env  []string
}

// check refuses the commits fetched from a remote (theirs' history beyond main) that break
// the store's rules (gitserve.CheckFetched), or that a redaction here rewrote: nothing of
// them is merged.
func (g *gitCmd) check(ctx context.Context, s *gitstore.Store, theirs string) error {
	ours := s.Head()
	out, err := g.out(ctx, nil, "rev-list", "--topo-order", "--reverse", theirs, "^"+ours)
	if err != nil {
		return fmt.Errorf("list the fetched commits: %w", err)
	}
	for _, h := range strings.Fields(out) {
		if _, rewritten, err := s.RewrittenTo(ctx, h); err != nil {
			return err
		} else if rewritten {
			return fmt.Errorf("the remote's main holds commit %s, which a redaction here rewrote, with commits on top "+
				"that are not here; merging them would bring the redacted content back, so nothing was merged. "+
				"Sync the replica that made those commits first (it takes the redaction), or force-push this store's main "+
				"over the remote's once what is on top is kept elsewhere", short(h))
		}
	}
	problems, err := gitserve.CheckFetched(g.repo, ours, strings.Fields(out))
	if err != nil {
		return fmt.Errorf("check the fetched commits: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("the fetched commits break the store's rules, so nothing was merged:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// replaceRewritten force-pushes main over the remote's main if that is a commit that a
// redaction here rewrote (the remote still has the history from before the redaction, and
// nothing on top), and returns the commit it replaced. It asks the remote first, so that the
// redacted content is not fetched back.
func (g *gitCmd) replaceRewritten(ctx context.Context, s *gitstore.Store, r Remote) (string, error) {
	out, err := g.out(ctx, nil, "ls-remote", "--", r.URL, "refs/heads/main")
	if err != nil {
		return "", fmt.Errorf("fetch from %s (%s): %w", r.Name, r.URL, err)
	}
	theirs, _, _ := strings.Cut(strings.TrimSpace(out), "\t")
	if theirs == "" {
		return "", nil
	}
	if _, rewritten, err := s.RewrittenTo(ctx, theirs); err != nil || !rewritten {
		return "", err
	}
	if err := g.pushLease(ctx, r, s.Head(), theirs); err != nil {
		return "", err
	}
	return theirs, nil
}

// takeRedactions redacts here the versions that the fetched commits record as redacted on
// another replica, as that replica did (same actor and time), so that both rewrite their
// shared history into the same commits. It returns the versions it redacted.
func (g *gitCmd) takeRedactions(ctx context.Context, s *gitstore.Store, theirs string) ([]string, error) {
	out, err := g.out(ctx, nil, "log", "--format=%B%x00", "--grep=^"+gitstore.TrailerRedacted+": ", theirs, "^"+s.Head())
	if err != nil {
		return nil, fmt.Errorf("list the fetched redactions: %w", err)
	}
	// In the order they were made, not git log's (newest commit first): a redaction adds
	// trailers to the commits it rewrites, so another order gives other commits.
	var reds []gitstore.RecordedRedaction
	for _, msg := range strings.Split(out, "\x00") {
		reds = append(reds, gitstore.RedactionsIn(strings.TrimSpace(msg))...)
	}
	slices.SortStableFunc(reds, func(a, b gitstore.RecordedRedaction) int { return a.At.Compare(b.At) })
	var done []string
	for _, red := range reds {
		v, err := s.Version(ctx, red.VersionID, false)
		if gitstore.IsKind(err, gitstore.KindNotFound) || err == nil && v.RedactedAt != nil {
			continue // a version this replica never had, or redacted here already
		}
		if err != nil {
			return done, err
		}
		if _, err := s.Redact(ctx, gitstore.RedactInput{VersionID: red.VersionID, Actor: red.Actor, At: red.At}); err != nil {
			return done, fmt.Errorf("take the remote's redaction of %s: %w", red.VersionID, err)
		}
		done = append(done, red.VersionID)
	}
	return done, nil
}

// newGit returns the runner of git on the repository repo. Without the git program its
// error is gitexec.ErrNoGit.
func newGit(repo string) (*gitCmd, error) {
	if err := gitexec.Need("sync"); err != nil {
		return nil, err
	}
	repo, err := filepath.Abs(repo)
	if err != nil {
		return nil, err
	}
	// GIT_TERMINAL_PROMPT=0 and no askpass: a remote that wants a password fails at once,
	// with git's message, instead of waiting for a person at a prompt.
	env := []string{"GIT_DIR=" + repo, "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS="}
	if batchSSH() {
		env = append(env, "GIT_SSH_COMMAND=ssh -o BatchMode=yes")
	}
	return &gitCmd{repo: repo, env: env}, nil
}

func (g *gitCmd) out(ctx context.Context, stdin []byte, args ...string) (string, error) {
	cmd := gitexec.Command(ctx, args...)
	cmd.Env = g.env
	cmd.Dir = g.repo
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		// push --porcelain says why a ref was rejected on stdout: "!	src:dst	[rejected] (why)".
		for _, line := range strings.Split(stdout.String(), "\n") {
			if strings.HasPrefix(line, "!") {
				msg = strings.TrimSpace(strings.Join(strings.Fields(line[1:]), " ") + "\n" + msg)
			}
		}
		if msg == "" {
			msg = err.Error()
		}
		return stdout.String(), &gitError{args: args, msg: msg, err: err}
	}
	return stdout.String(), nil
}

// batchSSH reports whether git's ssh should be made one that never asks a question (a key
// from the agent or ~/.ssh, or fail): unless the user chose their own ssh command.
func batchSSH() bool {
	if os.Getenv("GIT_SSH_COMMAND") != "" || os.Getenv("GIT_SSH") != "" {
		return false
	}
	out, _ := gitexec.Command(context.Background(), "config", "--get", "core.sshCommand").Output()
	return strings.TrimSpace(string(out)) == ""
}

type gitError struct {
	args []string
	msg  string
	err  error
}

func (e *gitError) Error() string { return e.msg }
func (e *gitError) Unwrap() error { return e.err }

// fetch fetches the remote's main into its tracking ref and returns it; empty is set if the
// remote has no main (a new, empty repository).
func (g *gitCmd) fetch(ctx context.Context, r Remote) (head string, empty bool, err error) {
	// Only the process that holds the data directory syncs, one remote at a time: a lock
	// on the tracking ref is left by a crash, and would refuse every fetch.
	os.Remove(filepath.Join(g.repo, trackingRef(r.Name)+".lock"))
	// core.fsync: the merge that main moves to next refers to these objects, so they are on
	// disk before it is (git's default does not fsync them).
	_, err = g.out(ctx, nil, "-c", "core.fsync=objects,reference", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc",
		"--", r.URL, "+refs/heads/main:"+trackingRef(r.Name))
	if err != nil {
		if strings.Contains(err.Error(), "couldn't find remote ref") {
			return "", true, nil
		}
		return "", false, fmt.Errorf("fetch from %s (%s): %w", r.Name, r.URL, err)
	}
	out, err := g.out(ctx, nil, "rev-parse", "--verify", trackingRef(r.Name))
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", trackingRef(r.Name), err)
	}
	return strings.TrimSpace(out), false, nil
}

// push pushes commit main to the remote's main, which must be in main's history;
// ErrRejected if the remote moved meanwhile.
func (g *gitCmd) push(ctx context.Context, r Remote, main string) error {
	_, err := g.out(ctx, nil, "push", "--quiet", "--porcelain", "--", r.URL, main+":refs/heads/main")
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "non-fast-forward") || strings.Contains(msg, "fetch first") || strings.Contains(msg, "[rejected]") {
			return ErrRejected
		}
		if strings.Contains(msg, gitstore.TrailerPrefix) {
			msg += "\n(the remote is a gitmem server, which refuses pushes of commits with Gitmem-* trailers: sync through a plain git repository instead)"
		}
		return fmt.Errorf("push to %s (%s): %s", r.Name, r.URL, msg)
	}
	_, err = g.out(ctx, nil, "update-ref", trackingRef(r.Name), main)
	return err
}

// pushLease pushes main over the remote's main if that is lease (any value if lease is "").
func (g *gitCmd) pushLease(ctx context.Context, r Remote, main, lease string) error {
	_, err := g.out(ctx, nil, "push", "--quiet", "--porcelain", "--force-with-lease=refs/heads/main:"+lease,
		"--", r.URL, main+":refs/heads/main")
	if err != nil {
		return fmt.Errorf("force-push to %s (%s): %w", r.Name, r.URL, err)
	}
	_, err = g.out(ctx, nil, "update-ref", trackingRef(r.Name), main)
	return err
}

// RemoveTrackingRef deletes the ref that kept a removed remote's main.
func RemoveTrackingRef(ctx context.Context, s *gitstore.Store, remote string) error {
	g, err := newGit(s.RepoPath())
	if err != nil {
		return err
	}
	_, err = g.out(ctx, nil, "update-ref", "-d", trackingRef(remote))
	return err
}
