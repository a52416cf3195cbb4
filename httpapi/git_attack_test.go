package httpapi

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
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
