package httpapi

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/apikeys"
)

// pushWithin runs git push in dir with args and fails the test if it takes longer than
// limit; it returns git's output. The push hook checks a push while git waits for it, so
// this bounds the hook's work.
func pushWithin(t *testing.T, dir string, limit time.Duration, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"push"}, args...)...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	cmd.WaitDelay = time.Second // git's helpers keep its output open while the server works
	start := time.Now()
	out, _ := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("git push %s took more than %s (the hook still runs on the server)", strings.Join(args, " "), limit)
	}
	t.Logf("git push %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	return string(out)
}

// TestGitPushWideFolder: a push whose folder holds many names is checked in time linear in
// them. The check that no two names of a folder differ only in case compared every new name
// with every other: a propose key's push of a folder of 60,000 names (a pack of about a
// megabyte, since they can all be one blob) kept the hook busy for more than a minute of CPU,
// and 300,000 names for hours, while the push held one of the server's requests.
func TestGitPushWideFolder(t *testing.T) {
	g := startGitServer(t)
	_, _, _, _, wa := proposerClone(t, g)
	blob := gitIn(t, wa, "one blob for every name\n", "hash-object", "-w", "--stdin")
	var tree strings.Builder
	for i := range 60000 {
		fmt.Fprintf(&tree, "100644 blob %s\tn%07d.md\n", blob, i)
	}
	// A name that breaks a rule, so that the push is refused once the folder is checked.
	fmt.Fprintf(&tree, "100644 blob %s\tN0000000.md\n", blob)
	wide := gitIn(t, wa, tree.String(), "mktree")
	root := gitIn(t, wa, gitOK(t, wa, "ls-tree", "HEAD")+"040000 tree "+wide+"\twide\n", "mktree")
	commit := gitIn(t, wa, "", "commit-tree", root, "-p", "HEAD", "-m", "a wide folder")
	out := pushWithin(t, wa, 30*time.Second, "origin", commit+":refs/heads/proposals/wide")
	mustHave(t, "push of a wide folder", out, "/wide/N0000000.md: differs only in case from /wide/n0000000.md")
}

// TestGitPushManyParents: a pushed commit with more parents than any merge needs is refused.
// The hook reads a commit's folders against each parent's, holding every parent's entries of
// a folder at once: a propose key's push of one commit with 500 parents over a folder of
// 20,000 names (500 small commits that share one tree, about a hundred kilobytes pushed)
// made the hook hold 2.8 GB, and its memory grows with parents times names.
func TestGitPushManyParents(t *testing.T) {
	const maxPushParents = 16 // gitserve.MaxParents
	g := startGitServer(t)
	_, _, _, _, wa := proposerClone(t, g)
	tree := strings.TrimSpace(gitOK(t, wa, "rev-parse", "HEAD^{tree}"))
	args := []string{"commit-tree"}
	for i := range maxPushParents + 1 {
		p := gitIn(t, wa, "", "commit-tree", tree, "-p", "HEAD", "-m", fmt.Sprintf("side %d", i))
		args = append(args, "-p", p)
	}
	commitFile(t, wa, "merged.md", "the octopus adds this\n", "a file for the merge's tree")
	merge := gitIn(t, wa, "", append(args, strings.TrimSpace(gitOK(t, wa, "rev-parse", "HEAD^{tree}")), "-m", "octopus")...)
	out := pushWithin(t, wa, time.Minute, "origin", merge+":refs/heads/proposals/octopus")
	mustHave(t, "push of an octopus merge", out, fmt.Sprintf("has %d parents; a pushed commit has at most %d", maxPushParents+1, maxPushParents))
	// A merge of two, as git makes them, is taken.
	side := gitIn(t, wa, "", "commit-tree", tree, "-p", "HEAD~1", "-m", "side")
	two := gitIn(t, wa, "", "commit-tree", strings.TrimSpace(gitOK(t, wa, "rev-parse", "HEAD^{tree}")), "-p", "HEAD", "-p", side, "-m", "merge")
	gitOK(t, wa, "push", "-q", "origin", two+":refs/heads/proposals/merge")
}

// packObject is an object of a hand-made pack: its type (1 commit, 2 tree, 3 blob) and content.
type packObject struct {
	typ  int
	data []byte
}

// handPack makes a pack of the objects, each whole and compressed, as git's client would not:
// it sends only what the pushed commits hold.
func handPack(t *testing.T, objs []packObject) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("PACK")
	binary.Write(&b, binary.BigEndian, uint32(2))
	binary.Write(&b, binary.BigEndian, uint32(len(objs)))
	for _, o := range objs {
		n := len(o.data)
		c := byte(o.typ<<4) | byte(n&15)
		n >>= 4
		for n > 0 {
			b.WriteByte(c | 0x80)
			c = byte(n & 0x7f)
			n >>= 7
		}
		b.WriteByte(c)
		zw := zlib.NewWriter(&b)
		zw.Write(o.data)
		zw.Close()
	}
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

// newObjects are the objects of the commits of wt's HEAD that origin/main lacks.
func newObjects(t *testing.T, wt string) []packObject {
	t.Helper()
	types := map[string]int{"commit": 1, "tree": 2, "blob": 3}
	var objs []packObject
	for _, f := range strings.Fields(gitOK(t, wt, "rev-list", "--objects", "HEAD", "^origin/main")) {
		if len(f) != 40 {
			continue // a path of rev-list's
		}
		typ := strings.TrimSpace(gitOK(t, wt, "cat-file", "-t", f))
		objs = append(objs, packObject{typ: types[typ], data: []byte(gitOK(t, wt, "cat-file", typ, f))})
	}
	return objs
}

// TestGitPushUnreadableObject: a push may not bring an object larger than any memory, such
// as one that none of its commits holds. git takes into the repository whatever the pack
// holds; the hook checked only what the commits hold. A propose key's push of a proposal
// branch with a 65 MiB blob of zeros beside it (66 KB of pack) was taken: gitmem reads no
// object over 64 MiB, so the store's pack maintenance failed at every write from then on
// ("pack loose objects ... object larger than allowed"), and each write left one more pack
// (200 writes, 200 more packs) until someone ran gitmem gc.
func TestGitPushUnreadableObject(t *testing.T) {
	g := startGitServer(t)
	_, _, a, store, wa := proposerClone(t, g)
	commitFile(t, wa, "note.md", "a note\n", "a note")
	head := strings.TrimSpace(gitOK(t, wa, "rev-parse", "HEAD"))
	for _, c := range []struct {
		name string
		junk packObject
	}{
		{"larger than gitmem reads", packObject{typ: 3, data: make([]byte, 65<<20)}},
		{"larger than a memory", packObject{typ: 3, data: bytes.Repeat([]byte("x"), 102401)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref := "refs/heads/proposals/" + strings.ReplaceAll(c.name, " ", "-")
			cmd := fmt.Sprintf("%s %s %s\x00report-status\n", strings.Repeat("0", 40), head, ref)
			body := fmt.Sprintf("%04x%s0000", len(cmd)+4, cmd) + string(handPack(t, append(newObjects(t, wa), c.junk)))
			status, out := g.rawGit(t, a, store, "receive-pack", body, "")
			if status != 200 || !strings.Contains(out, "ng "+ref) || strings.Contains(out, "ok "+ref) {
				t.Fatalf("push with an object %s: %d\n%s", c.name, status, out)
			}
			if refs := gitOK(t, "", "ls-remote", g.repoURL(a, store)); strings.Contains(refs, ref) {
				t.Fatalf("the refused push made its branch:\n%s", refs)
			}
		})
	}
	// The same commit, as git pushes it, is taken.
	gitOK(t, wa, "push", "-q", "origin", "HEAD:proposals/note")
}

// branchesOfOneCommit makes n local branches x/bNNNN of one new commit in the clone wa, to
// push as so many proposal branches (refs/heads/x/*:refs/heads/proposals/*): a few hundred
// bytes of pack that the hook checks branch by branch.
func branchesOfOneCommit(t *testing.T, wa string, n int) {
	t.Helper()
	commitFile(t, wa, "note.md", "a note\n", "a note")
	head := strings.TrimSpace(gitOK(t, wa, "rev-parse", "HEAD"))
	var refs strings.Builder
	for i := range n {
		fmt.Fprintf(&refs, "create refs/heads/x/b%04d %s\n", i, head)
	}
	gitIn(t, wa, refs.String(), "update-ref", "--stdin")
}

// TestGitPushCheckedWithinGitTimeout: the hook gives up a push that it cannot check within
// the server's time for a git request, and refuses it. The request of a push waits for the
// hook, which git runs and nothing stopped: past --git-timeout it went on, and held one of
// the server's requests, for as long as its checks took. A push of 2,000 proposal branches
// (a few hundred bytes of pack: the branches are one commit) took 17 s of checks on the
// 2-core machine before its refusal, one of 300,000 folder names ran past 10 minutes, and
// 100,000 commits over a folder of 20,000 memories would take an hour.
func TestGitPushCheckedWithinGitTimeout(t *testing.T) {
	const timeout = 4 * time.Second
	// Room for the branches' proposals, so that the hook checks each (TestGitPushManyBranches).
	g := startGitServerLimited(t, GitOptions{HookProgram: fastHook}, Limits{GitTimeout: timeout, MaxOpenProposals: 5000})
	_, _, a, store, wa := proposerClone(t, g)
	branchesOfOneCommit(t, wa, 2000)
	// git's client takes 2-3 s of its own over 2,000 branches, more under -race on a busy
	// machine; the message says that the deadline ended the checks (17 s without it).
	out := pushWithin(t, wa, 30*time.Second, "origin", "refs/heads/x/*:refs/heads/proposals/*")
	mustHave(t, "push checked past the timeout", out, "could not check this push within", "nothing was changed")
	if refs := gitOK(t, "", "ls-remote", g.repoURL(a, store)); strings.Contains(refs, "proposals/") {
		t.Fatalf("the refused push made branches:\n%s", refs)
	}
}

// TestGitPushesPerKey: one key has at most two pushes checked at once; a third is refused
// (429) before git runs, and another key's push goes on. Each push runs git and the hook
// (the gitmem binary) on the server, whose memory grows with the pushed folders: the hook of
// one propose key's push of a folder of a million names (a pack of a few megabytes) held
// about 400 MB, six at once 2.4 GB, and the key could run as many at once as the server
// serves requests (128), past the memory of the machine.
func TestGitPushesPerKey(t *testing.T) {
	hook := newPausedHook(t, false)
	g := startGitServerWith(t, GitOptions{HookProgram: hook.program})
	_, one, _ := g.keys.Create("one", apikeys.ReadWrite, "")
	_, two, _ := g.keys.Create("two", apikeys.ReadWrite, "")
	store := g.createStore(t, one, "pushed")
	g.write(t, one, store, "/a.md", "a\n")
	clone := func(key, name string) string {
		wt := filepath.Join(t.TempDir(), name)
		gitOK(t, "", "clone", "-q", g.repoURL(key, store), wt)
		commitFile(t, wt, name+".md", name+"\n", name)
		return wt
	}
	wts := []string{clone(one, "first"), clone(one, "second"), clone(one, "third"), clone(two, "other")}
	first, second := hook.push(t, wts[0]), hook.push(t, wts[1])
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "push", "origin", "main")
	cmd.Dir, cmd.Env = wts[2], gitEnv()
	cmd.WaitDelay = time.Second // git's helpers keep its output open while the server waits
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil || err == nil || !strings.Contains(string(out), "429") {
		t.Errorf("a third push of one key while two are checked: %v\n%s", err, out)
	}
	if n := hook.paused(); n != 2 {
		t.Errorf("%d hooks ran, want 2", n)
	}
	// As a client of its own sees the refusal (git shows only the 429): with Retry-After,
	// which such clients and the SDKs wait for.
	// Its body is left unread; the connection stays open for the client's next request
	// (net/http read that request while it closed the unread body after the handler, and
	// dropped the connection with a panic: golang/go#68560).
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest("POST", g.url+"/git/"+store+".git/git-receive-pack", strings.NewReader("0000"))
	req.SetBasicAuth("git", one)
	req.Header.Set("Content-Type", "application/x-git-receive-pack-request")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), "--max-pushes-per-key") {
		t.Errorf("a third push of one key, over HTTP: %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	reused := false
	req, _ = http.NewRequest("GET", g.url+"/livez", nil)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused },
	}))
	if resp, err = client.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !reused {
		t.Error("the connection of a refused push was not kept for the next request")
	}
	// A client that asks to continue (Expect: 100-continue, as curl does for git's large
	// pushes) sends its pack only once told to, or once it gives up waiting: the refusal
	// reaches it at once, not after the server has waited for the pack it refused.
	conn, err := net.Dial("tcp", strings.TrimPrefix(g.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	auth := base64.StdEncoding.EncodeToString([]byte("git:" + one))
	fmt.Fprintf(conn, "POST /git/%s.git/git-receive-pack HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n"+
		"Content-Type: application/x-git-receive-pack-request\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n", store, auth)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	status, err := bufio.NewReader(conn).ReadString('\n')
	if !strings.HasPrefix(status, "HTTP/1.1 429") {
		t.Errorf("a third push of one key that waits to continue: %q, %v", status, err)
	}
	other := hook.push(t, wts[3])
	put(t, filepath.Join(hook.dir, "go"), "")
	for _, p := range []<-chan pushResult{first, second, other} {
		<-p
	}
}

// TestGitPushManyBranches: a push of more proposal branches than the store can hold open
// proposals is refused before each is checked. The hook checked every branch (a few git
// commands each) and only then did the server find no room for their proposals: 2,000
// branches of one commit, a push of a few hundred bytes, took 17 s of checks, and the time
// grew with the branches up to the request's time.
func TestGitPushManyBranches(t *testing.T) {
	g := startGitServer(t)
	_, _, _, _, wa := proposerClone(t, g)
	branchesOfOneCommit(t, wa, 2000)
	// git's client takes 2-3 s of its own over 2,000 branches, more under -race on a busy
	// machine; the message says that the count refused the push, before any check.
	out := pushWithin(t, wa, 30*time.Second, "origin", "refs/heads/x/*:refs/heads/proposals/*")
	mustHave(t, "push of 2,000 proposal branches", out, "the push updates 2000 proposal branches; a store holds at most 64 open proposals")
}
