package gitserve

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/gitexec"
)

const (
	mainRef  = "refs/heads/main"
	zeroHash = "0000000000000000000000000000000000000000"
)

// update is one line of a pre-receive hook's input: a ref and its old and new values.
type update struct{ old, new, ref string }

// problem is one broken rule: where (a file or a ref), the rule, and the commit that brought it.
type problem struct {
	where, rule string
	commit      string // short hash and subject, if a commit brought it
}

// checker checks a push against the rules of a memory store, reading the pushed objects
// with git plumbing. It keeps what it checked, so that a file or folder that many pushed
// commits share is checked once.
type checker struct {
	env     []string // added to the hook's environment for the git commands (GIT_DIR)
	storeID string
	objs    *objects
	// importing checks a whole history that gitmem made elsewhere (CheckImport): its
	// commits may carry gitmem's trailers and may archive the store.
	importing bool
	// fetched checks the commits a sync fetched from a remote (CheckFetched): like an
	// import, but held to the store's secrets policy, since they are merged into main.
	fetched bool

	problems []problem
	reported map[string]bool

	// deadline, if set, is when the checks give up (errLate): a push's request waits for
	// them, and must end within the server's time for it.
	deadline time.Time
	// maxBranches, if not 0, is the most proposal branches one push may update.
	maxBranches int

	// access is the pushing key's access; a propose key pushes proposal branches only.
	access string
	// inProposal: the commits being checked are a proposal branch's, which the review
	// policy does not apply to (their review is the proposal's).
	inProposal bool

	commit  string          // the commit being checked, for the messages
	trees   map[string]bool // tree hash + "\x00" + folder: checked
	blobs   map[string]string
	oldInfo *gitstore.StoreInfo // .gitmem/store.json on main before the push
	// rename is the store's name in main's .gitmem/store.json after the push, if the push
	// changes it: the server checks that no other store has it (Push.Rename).
	rename string
	// proposed are the commits that the push adds to proposal branches (Push.Proposed).
	proposed []string
	// branches are the proposal branches it moves, to their new commits (Push.Branches).
	branches map[string]Move
}

func (c *checker) fail(where, rule string) {
	key := where + "\x00" + rule
	if c.reported[key] {
		return
	}
	c.reported[key] = true
	c.problems = append(c.problems, problem{where: where, rule: rule, commit: c.commit})
}

// errLate is the error of checks that went past the checker's deadline.
var errLate = errors.New("the checks went past their deadline")

// late returns errLate once the deadline has passed.
func (c *checker) late() error {
	if !c.deadline.IsZero() && time.Now().After(c.deadline) {
		return errLate
	}
	return nil
}

// context is the context of the git commands that the checks run: it ends at the deadline.
func (c *checker) context() (context.Context, context.CancelFunc) {
	if c.deadline.IsZero() {
		return context.Background(), func() {}
	}
	return context.WithDeadline(context.Background(), c.deadline)
}

// maxCommits bounds how many commits one push may bring.
const maxCommits = 100000

// MaxParents bounds the parents of a pushed commit. A commit's folders are checked against
// each parent's, whose entries are held at once: without a bound, one commit with thousands
// of parents that share a large folder made the hook hold gigabytes.
const MaxParents = 16

// check checks the updates of one push. It returns the commits that the push adds to main
// (oldest first) when every rule holds; otherwise c.problems says what is wrong.
func (c *checker) check(updates []update) ([]string, error) {
	var main *update
	var props []update
	for i, u := range updates {
		switch {
		case proposalRef.MatchString(u.ref) && u.new == zeroHash:
			c.fail(u.ref, "deleting a proposal's branch is refused: reject the proposal instead")
		case proposalRef.MatchString(u.ref) && strings.HasPrefix(strings.ToLower(strings.TrimPrefix(u.ref, gitstore.ProposalBranches)), "prop_"):
			// gitmem keeps the proposals made through the API there (proposals/<prop_id>):
			// a push to one would show reviewers who fetch it what the proposal does not hold.
			c.fail(u.ref, "proposals/prop_... are the branches gitmem keeps of proposals made through the API: push your proposal as another name (git push origin HEAD:proposals/NAME)")
		case proposalRef.MatchString(u.ref):
			props = append(props, u)
		case u.ref != mainRef && strings.HasPrefix(u.ref, "refs/tags/"):
			c.fail(u.ref, "only refs/heads/main may be pushed: a memory store keeps no tags")
		case u.ref != mainRef:
			c.fail(u.ref, "only refs/heads/main and proposal branches (refs/heads/proposals/NAME) may be pushed: a memory store keeps its memories on main "+
				"(to publish this work: git push origin HEAD:main, or HEAD:proposals/NAME for review)")
		case c.access == "propose":
			c.fail(u.ref, "this API key may only propose: push to a proposal branch instead (git push origin HEAD:proposals/NAME), for a person to approve")
		case u.new == zeroHash:
			c.fail(u.ref, "deleting main is refused: it holds the store's memories")
		default:
			main = &updates[i]
		}
	}
	if main == nil && len(props) == 0 || len(c.problems) > 0 {
		return nil, nil
	}
	if c.maxBranches > 0 && len(props) > c.maxBranches {
		c.fail(gitstore.ProposalBranches+"*", fmt.Sprintf("the push updates %d proposal branches; a store holds at most %d open proposals "+
			"(gitmem serve --max-open-proposals), each branch one: push fewer at a time", len(props), c.maxBranches))
		return nil, nil
	}
	for _, u := range props {
		if err := c.late(); err != nil {
			return nil, err
		}
		// The branch where the push found it, as git's update of it will compare: a push made
		// on another (another push's move, a client's own old value) is not the one whose move
		// the branch shows once git is done, and no proposal of it may take the branch.
		cur, err := c.run("rev-parse", "--verify", "-q", u.ref)
		if err != nil && !isExit(err, 1) {
			return nil, err
		}
		if cur == "" {
			cur = zeroHash
		}
		if cur != u.old {
			c.fail(u.ref, fmt.Sprintf("the branch moved while you pushed (it is %s now, your push found it %s): run git fetch, and push again", where(cur), where(u.old)))
			continue
		}
		if err := c.checkProposal(u); err != nil {
			return nil, err
		}
		if c.branches == nil {
			c.branches = map[string]Move{}
		}
		m := Move{To: u.new}
		if u.old != zeroHash {
			m.From = u.old
		}
		c.branches[u.ref] = m
	}
	if main == nil {
		if len(c.problems) > 0 {
			return nil, nil
		}
		return []string{}, nil
	}
	cur, err := c.run("rev-parse", "--verify", "-q", mainRef)
	if err != nil && !isExit(err, 1) {
		return nil, err
	}
	if cur == "" {
		cur = zeroHash
	}
	if cur != main.old {
		c.fail(mainRef, fmt.Sprintf("main moved while you pushed (it is at %s now, your push was made on %s): "+
			"run git pull --rebase and push again", short(cur), short(main.old)))
		return nil, nil
	}
	if main.old != zeroHash {
		if _, err := c.run("merge-base", "--is-ancestor", main.old, main.new); isExit(err, 1) {
			c.fail(mainRef, fmt.Sprintf("not a fast-forward: main is at %s, which your push does not contain; "+
				"force pushes are refused (run git pull --rebase and push again)", short(main.old)))
			return nil, nil
		} else if err != nil {
			return nil, err
		}
		obj, err := c.objs.read(main.old+":"+gitstore.StoreFile, maxMeta)
		if err != nil {
			return nil, err
		}
		if !obj.missing && obj.data != nil {
			if info, err := gitstore.ParseStoreFile(obj.data); err == nil {
				c.oldInfo = &info
				if info.ArchivedAt != nil {
					c.fail(mainRef, fmt.Sprintf("memory store %s is archived and read-only", c.storeID))
					return nil, nil
				}
			}
		}
	}
	args := []string{"rev-list", "--topo-order", "--reverse", main.new}
	if main.old != zeroHash {
		args = append(args, "^"+main.old)
	}
	out, err := c.run(args...)
	if err != nil {
		return nil, err
	}
	commits := strings.Fields(out)
	if len(commits) > maxCommits {
		c.fail(mainRef, fmt.Sprintf("the push brings %d commits; the limit is %d", len(commits), maxCommits))
		return nil, nil
	}
	for _, h := range commits {
		if err := c.checkCommit(h); err != nil {
			return nil, err
		}
	}
	if err := c.checkQuotas(mainRef, main.old, main.new); err != nil {
		return nil, err
	}
	if err := c.checkRename(main.new); err != nil {
		return nil, err
	}
	if len(c.problems) > 0 {
		return nil, nil
	}
	return commits, nil
}

// proposalRef is a proposal branch: refs/heads/proposals/NAME.
var proposalRef = regexp.MustCompile(`^refs/heads/proposals/[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// checkProposal checks the commits that a push brings to a proposal branch by the rules of
// main's: they are to be merged into main once approved. The branch must come from main.
func (c *checker) checkProposal(u update) error {
	cur, err := c.run("rev-parse", "--verify", "-q", mainRef)
	if err != nil {
		return err
	}
	if c.oldInfo == nil {
		obj, err := c.objs.read(cur+":"+gitstore.StoreFile, maxMeta)
		if err != nil {
			return err
		}
		if !obj.missing && obj.data != nil {
			if info, err := gitstore.ParseStoreFile(obj.data); err == nil {
				c.oldInfo = &info
			}
		}
	}
	if at := c.archivedAt(); at != nil {
		c.fail(u.ref, fmt.Sprintf("memory store %s is archived and read-only", c.storeID))
		return nil
	}
	if _, err := c.run("merge-base", u.new, cur); isExit(err, 1) {
		c.fail(u.ref, "the branch shares no history with main: make it from main (git checkout -b NAME origin/main)")
		return nil
	} else if err != nil {
		return err
	}
	args := []string{"rev-list", "--topo-order", "--reverse", u.new, "^" + cur}
	if u.old != zeroHash {
		args = append(args, "^"+u.old)
	}
	out, err := c.run(args...)
	if err != nil {
		return err
	}
	commits := strings.Fields(out)
	if len(commits) > maxCommits {
		c.fail(u.ref, fmt.Sprintf("the push brings %d commits; the limit is %d", len(commits), maxCommits))
		return nil
	}
	if c.proposed = append(c.proposed, commits...); len(c.proposed) > maxCommits {
		c.fail(u.ref, fmt.Sprintf("the push brings %d commits to proposal branches; the limit is %d", len(c.proposed), maxCommits))
		return nil
	}
	c.inProposal = true
	defer func() { c.inProposal = false }()
	for _, h := range commits {
		if err := c.checkCommit(h); err != nil {
			return err
		}
	}
	return c.checkQuotas(u.ref, cur, u.new)
}

// checkCommit checks the tree of one pushed commit. What is the same, at the same path, as
// in one of its parents was checked with that parent, or is already on main.
func (c *checker) checkCommit(h string) error {
	if err := c.late(); err != nil {
		return err
	}
	ci, err := c.objs.commit(h)
	if err != nil {
		return err
	}
	c.commit = short(h) + " " + strconv.Quote(truncate(ci.subject, 50))
	if keys := gitstore.GitmemTrailers(ci.message); len(keys) > 0 && !c.importing {
		where := "commit " + c.commit
		c.commit = ""
		c.fail(where, "its message has gitmem's own trailers ("+strings.Join(keys, ", ")+"), which name the API key or "+
			"session and the ids of a version: only gitmem writes them; remove them (git commit --amend, or git rebase -i and reword)")
		c.commit = where[len("commit "):]
	}
	if len(ci.parents) > MaxParents {
		where := "commit " + c.commit
		c.commit = ""
		c.fail(where, fmt.Sprintf("has %d parents; a pushed commit has at most %d (git merge makes two): merge the branches in fewer steps", len(ci.parents), MaxParents))
		return nil
	}
	var parents []string
	for _, p := range ci.parents {
		pc, err := c.objs.commit(p)
		if err != nil {
			return err
		}
		parents = append(parents, pc.tree)
	}
	return c.checkTree(ci.tree, parents, "")
}

// checkTree checks the folder at dir ("" for the root, else "a/b/") whose tree is h, against
// the trees of the same folder in the parents (or "" where they have none).
func (c *checker) checkTree(h string, parents []string, dir string) error {
	key := h + "\x00" + dir
	if c.trees[key] {
		return nil
	}
	if err := c.late(); err != nil {
		return err
	}
	c.trees[key] = true
	entries, err := c.objs.tree(h)
	if err != nil {
		return err
	}
	if len(entries) == 0 && dir != "" {
		c.fail(display(dir), "an empty folder: git keeps no empty folders, so this tree was made by hand; remove it")
		return nil
	}
	inParents := make([]map[string]entry, len(parents))
	for i, p := range parents {
		inParents[i] = map[string]entry{}
		if p == "" {
			continue
		}
		pes, err := c.objs.tree(p)
		if err != nil {
			return err
		}
		for _, e := range pes {
			inParents[i][e.name] = e
		}
	}
	unchanged := func(e entry) bool {
		for _, m := range inParents {
			if pe, ok := m[e.name]; ok && pe.mode == e.mode && pe.hash == e.hash {
				return true
			}
		}
		return false
	}
	if dir == "" {
		hasMeta := false
		for _, e := range entries {
			if e.name == ".gitmem" {
				hasMeta = true
			}
		}
		inParent := false
		for _, m := range inParents {
			_, ok := m[".gitmem"]
			inParent = inParent || ok
		}
		if !hasMeta && (c.oldInfo != nil || inParent) {
			c.fail("/"+gitstore.StoreFile, "removed: it holds the store's metadata (its id and name) and must stay")
		}
	}
	c.checkNewNames(entries, inParents, dir)
	// A folder that the store reviews changes only through a proposal's approval.
	here := map[string]bool{}
	for _, e := range entries {
		here[e.name] = true
		if !unchanged(e) {
			c.checkReview(dir+e.name, e.isTree(), false)
		}
	}
	for _, m := range inParents {
		for name, pe := range m {
			if !here[name] {
				c.checkReview(dir+name, pe.isTree(), true)
			}
		}
	}
	for _, e := range entries {
		path := dir + e.name
		if unchanged(e) {
			continue
		}
		if dir == "" && e.name == ".gitmem" {
			if err := c.checkMeta(e, inParents); err != nil {
				return err
			}
			continue
		}
		switch e.mode {
		case "40000":
			sub := make([]string, len(inParents))
			for i, m := range inParents {
				if pe, ok := m[e.name]; ok && pe.isTree() {
					sub[i] = pe.hash
				}
			}
			if err := c.checkTree(e.hash, sub, path+"/"); err != nil {
				return err
			}
		case "100644":
			if err := c.checkFile(path, e.hash); err != nil {
				return err
			}
		case "100755":
			c.fail(display(path), "an executable file (mode 100755): memories are plain files, mode 100644 only "+
				"(git update-index --chmod=-x, or git config core.fileMode false)")
		case "120000":
			c.fail(display(path), "a symbolic link: memories are plain files, mode 100644 only")
		case "160000":
			c.fail(display(path), "a submodule (gitlink): memories are plain files, mode 100644 only")
		default:
			c.fail(display(path), fmt.Sprintf("a file of mode %s: memories are plain files, mode 100644 only", e.mode))
		}
	}
	return nil
}

// checkNewNames checks the names that the folder dir brings, those in none of its parents:
// each must be a name that every clone can hold (gitstore.ValidateNewSegment), and must not
// differ only in case from another name in the folder. Names the parents have are taken as
// they are, so that a store that holds such names from before can still change them.
func (c *checker) checkNewNames(entries []entry, inParents []map[string]entry, dir string) {
	// The folder's names by their case fold, each in the folder's order: a name is compared
	// with the names of its own fold only, not with every other (a folder may hold hundreds
	// of thousands of names, and a push is checked while its request waits).
	var folds map[string][]int
	for _, e := range entries {
		known := false
		for _, m := range inParents {
			_, ok := m[e.name]
			known = known || ok
		}
		if known || dir == "" && e.name == ".gitmem" {
			continue
		}
		path := dir + e.name
		if err := gitstore.ValidateNewSegment("/"+path, e.name, dir == ""); err != nil {
			c.fail(display(path), ruleOf(err))
			continue
		}
		if folds == nil {
			folds = make(map[string][]int, len(entries))
			for i, o := range entries {
				k := foldKey(o.name)
				folds[k] = append(folds[k], i)
			}
		}
		for _, i := range folds[foldKey(e.name)] {
			if o := entries[i]; o.name != e.name {
				other := display(dir + o.name)
				if o.isTree() {
					other += "/"
				}
				c.fail(display(path), fmt.Sprintf("differs only in case from %s: a clone on macOS or Windows (whose file systems ignore case) "+
					"cannot hold both, so names that break clones are refused", other))
				break
			}
		}
	}
}

// foldKey is the same for two names exactly when strings.EqualFold says they are equal: each
// rune (U+FFFD for a byte that is not UTF-8, as EqualFold reads it) as the least rune of its
// orbit under unicode.SimpleFold.
func foldKey(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// pusher is the actor of the push: its key, the hook's REMOTE_USER.
func pusher() gitstore.Actor {
	actor := gitstore.Actor{Type: gitstore.UserActor, ID: os.Getenv("REMOTE_USER")}
	if strings.HasPrefix(actor.ID, "apikey_") {
		actor.Type = gitstore.APIActor
	}
	return actor
}

// checkReview refuses a pushed change of path (a file, or a folder) that the store's review
// policy keeps for proposals, unless the pushing key is exempt (the hook's REMOTE_USER).
func (c *checker) checkReview(path string, folder, deleted bool) {
	if c.importing || c.inProposal || c.oldInfo == nil || len(c.oldInfo.Policy.ReviewPaths) == 0 {
		return
	}
	p := "/" + path
	if folder {
		p += "/"
	}
	actor := pusher()
	reviewed := c.oldInfo.Policy.Reviews(p, actor)
	if !reviewed && folder && deleted {
		// A folder deleted whole takes the reviewed folders below it too (a changed one is
		// looked into, and its reviewed folders checked there).
		for _, dir := range c.oldInfo.Policy.ReviewPaths {
			if strings.HasPrefix(dir, p) && c.oldInfo.Policy.Reviews(dir, actor) {
				reviewed = true
			}
		}
	}
	if reviewed {
		c.fail(display(path), "in a folder that this store changes only through review: propose the change instead (a key with access propose, over the API or the tools), for a person to approve")
	}
}

// checkFile checks one memory: its path and its content.
func (c *checker) checkFile(path, blob string) error {
	if err := gitstore.ValidatePath("/" + path); err != nil {
		c.fail(display(path), ruleOf(err))
	}
	rule, ok := c.blobs[blob]
	if !ok {
		obj, err := c.objs.read(blob, gitstore.MaxContentBytes)
		if err != nil {
			return err
		}
		switch {
		case obj.missing || obj.typ != "blob":
			rule = "not a file (object " + short(blob) + " is missing or not a blob)"
		case obj.data == nil:
			rule = fmt.Sprintf("content is %d bytes; the limit is %d bytes", obj.size, gitstore.MaxContentBytes)
		default:
			if err := gitstore.ValidateContent(string(obj.data)); err != nil {
				rule = ruleOf(err)
			} else if rule, err = c.secretRule(obj.data); err != nil {
				return err
			}
		}
		c.blobs[blob] = rule
	}
	if rule != "" {
		c.fail(display(path), rule)
	}
	return nil
}

// checkPushedObjects refuses a push whose pack brings an object larger than any that a store
// holds: a blob over gitstore.MaxContentBytes, or another object over maxMeta. The rules
// above check what the pushed commits hold, but git keeps whatever the pack holds, and
// gitmem reads no object over 64 MiB: one such object that no commit holds made the store's
// pack maintenance fail at every write, each write then leaving one more pack. The objects
// are those of git's quarantine (GIT_QUARANTINE_PATH) alone, with their sizes as git reads
// them (a delta's size is that of the object it makes).
func (c *checker) checkPushedObjects() error {
	q := os.Getenv("GIT_QUARANTINE_PATH")
	if q == "" {
		return nil // a git before 2.11, which keeps no quarantine
	}
	c.commit = "" // no commit holds what this finds
	ctx, cancel := c.context()
	defer cancel()
	cmd := gitexec.Command(ctx, "cat-file", "--batch-all-objects", "--unordered",
		"--batch-check=%(objectname) %(objecttype) %(objectsize)")
	cmd.Env = append(slices.Clip(c.env), "GIT_OBJECT_DIRECTORY="+q, "GIT_ALTERNATE_OBJECT_DIRECTORIES=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git cat-file: %w", err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() && len(c.problems) < maxShown {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			continue
		}
		if f[1] == "blob" && size > gitstore.MaxContentBytes || size > maxMeta {
			c.fail("object "+short(f[0]), fmt.Sprintf("the push brings a %s of %d bytes, larger than any a memory store holds "+
				"(a memory is at most %d bytes): push the commits' own objects only", f[1], size, gitstore.MaxContentBytes))
		}
	}
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			return errLate
		}
		return fmt.Errorf("git cat-file --batch-all-objects: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return sc.Err()
}

// checkMeta checks the .gitmem folder: nothing but store.json, and store.json valid
// metadata of this store.
func (c *checker) checkMeta(e entry, inParents []map[string]entry) error {
	if !e.isTree() {
		c.fail("/.gitmem", "reserved for the store's metadata: it must be a folder that holds store.json")
		return nil
	}
	entries, err := c.objs.tree(e.hash)
	if err != nil {
		return err
	}
	var parentFiles []string
	for _, m := range inParents {
		if pe, ok := m[".gitmem"]; ok && pe.isTree() {
			pes, err := c.objs.tree(pe.hash)
			if err != nil {
				return err
			}
			for _, x := range pes {
				if x.name == "store.json" {
					parentFiles = append(parentFiles, x.mode+" "+x.hash)
				}
			}
		}
	}
	found := false
	for _, x := range entries {
		if x.name != "store.json" {
			where := "/.gitmem/" + x.name
			if x.isTree() {
				where += "/"
			}
			c.fail(display(where), "nothing but store.json may be under /.gitmem/, which is reserved for the store's metadata")
			continue
		}
		found = true
		if x.mode != "100644" {
			c.fail("/"+gitstore.StoreFile, "must be a plain file (mode 100644), not mode "+x.mode)
			continue
		}
		same := false
		for _, p := range parentFiles {
			same = same || p == x.mode+" "+x.hash
		}
		if same {
			continue
		}
		if c.inProposal {
			// A proposal's review shows memories, not settings, and approval must not
			// change what a propose key may not: the name, the policy, the quotas.
			c.fail("/"+gitstore.StoreFile, "a proposal may not change the store's settings; change them through the API or in a push to main")
			continue
		}
		obj, err := c.objs.read(x.hash, gitstore.MaxContentBytes)
		if err != nil {
			return err
		}
		if obj.data == nil {
			c.fail("/"+gitstore.StoreFile, fmt.Sprintf("is %d bytes; store metadata is far smaller", obj.size))
			continue
		}
		info, err := gitstore.ParseStoreFile(obj.data)
		switch {
		case err != nil:
			c.fail("/"+gitstore.StoreFile, ruleOf(err))
		case info.ID != c.storeID:
			c.fail("/"+gitstore.StoreFile, fmt.Sprintf("its id must stay %s, the id of this store (the push has %q)", c.storeID, info.ID))
		case !c.importing && !sameTime(info.ArchivedAt, c.archivedAt()):
			c.fail("/"+gitstore.StoreFile, "archived_at may not be changed by a push: archive a store through the API")
		default:
			if err := gitstore.ValidateStoreInfo(info); err != nil {
				c.fail("/"+gitstore.StoreFile, ruleOf(err))
			} else if c.oldInfo != nil && !c.importing {
				if err := c.oldInfo.Policy.ReviewChange(info.Policy, pusher()); err != nil {
					c.fail("/"+gitstore.StoreFile, ruleOf(err))
				}
			}
		}
	}
	if !found && len(parentFiles) > 0 {
		c.fail("/"+gitstore.StoreFile, "removed: it holds the store's metadata (its id and name) and must stay")
	}
	return nil
}

// checkRename notes the store's name at main's new commit if the push changes it.
func (c *checker) checkRename(main string) error {
	obj, err := c.objs.read(main+":"+gitstore.StoreFile, maxMeta)
	if err != nil || obj.missing || obj.data == nil {
		return err // checkMeta refused a store.json that is missing or too large
	}
	info, err := gitstore.ParseStoreFile(obj.data)
	if err == nil && (c.oldInfo == nil || info.Name != c.oldInfo.Name) {
		c.rename = info.Name
	}
	return nil
}

func (c *checker) archivedAt() *time.Time {
	if c.oldInfo == nil {
		return nil
	}
	return c.oldInfo.ArchivedAt
}

// run runs a git command in the hook's environment and returns its output, trimmed.
func (c *checker) run(args ...string) (string, error) {
	ctx, cancel := c.context()
	defer cancel()
	cmd := gitexec.Command(ctx, args...)
	cmd.Env = c.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && ctx.Err() != nil {
		return "", errLate
	}
	if err != nil && !isExit(err, 1) {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), err
}

func isExit(err error, code int) bool {
	return gitexec.ExitCode(err) == code
}

// ruleOf is the message of a gitstore error.
func ruleOf(err error) string {
	var ge *gitstore.Error
	if errors.As(err, &ge) {
		return ge.Message
	}
	return err.Error()
}

// where says where a branch is: at a commit, or not there (zeroHash).
func where(h string) string {
	if h == zeroHash {
		return "not there"
	}
	return "at " + short(h)
}

func short(h string) string {
	if len(h) > 7 {
		return h[:7]
	}
	return h
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// display shows a tree path as the memory path it would be, quoted if it holds bytes that a
// terminal would not show as they are.
func display(path string) string {
	p := "/" + path
	if strings.HasPrefix(path, "/") {
		p = path
	}
	ok := utf8.ValidString(p)
	for _, r := range p {
		if !unicode.IsPrint(r) {
			ok = false
		}
	}
	if ok {
		return p
	}
	return strconv.Quote(p)
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}
