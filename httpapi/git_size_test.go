package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"
)

// TestGitPushTooBig: a push whose pack is over MaxPushBytes is refused whole, with git's
// message in the pusher's terminal, and main does not move; a small push then works.
func TestGitPushTooBig(t *testing.T) {
	g := startGitServerWith(t, GitOptions{HookProgram: fastHook, MaxPushBytes: 1 << 20})
	store := g.createStore(t, "", "notes")
	g.write(t, "", store, "/n/0.md", "note\n")
	work := t.TempDir()
	gitOK(t, work, "clone", "-q", g.repoURL("", store), "c")
	wt := filepath.Join(work, "c")
	before := g.head(t, store)
	for i := range 30 { // 30 x 64 KiB of hex that does not compress well: about 1.9 MB
		raw := make([]byte, 32<<10)
		rand.Read(raw)
		put(t, filepath.Join(wt, fmt.Sprintf("big/%02d.md", i)), hex.EncodeToString(raw)+"\n")
	}
	gitOK(t, wt, "add", "-A")
	gitOK(t, wt, "commit", "-qm", "too much at once")
	out := gitFails(t, wt, "push")
	mustHave(t, "oversized push", out, "pack exceeds maximum allowed size")
	if h := g.head(t, store); h != before {
		t.Fatalf("main moved from %s to %s", before, h)
	}
	gitOK(t, wt, "reset", "-q", "--hard", "HEAD~1")
	put(t, filepath.Join(wt, "n/1.md"), "a small note\n")
	gitOK(t, wt, "add", "-A")
	gitOK(t, wt, "commit", "-qm", "small")
	gitOK(t, wt, "push", "-q")
	if c, _, ok := g.read(t, "", store, "/n/1.md"); !ok || c != "a small note\n" {
		t.Fatalf("small push: %q %v", c, ok)
	}
}
