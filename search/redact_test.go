package search

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/testlog"
)

// TestIndexFollowsRedaction leaves an index at a commit where a secret was current, then
// replaces the secret and redacts it while no index runs: the index follows the rewritten
// history from the commit that took its own commit's place, without starting over, and
// forgets the secret.
func TestIndexFollowsRedaction(t *testing.T) {
	dir := t.TempDir()
	logs := &testlog.Buffer{}
	opts := Options{Logger: slog.New(slog.NewTextHandler(logs, nil))}
	f := openFixture(t, dir, "", opts)
	f.write("/notes/keep.md", "keep this walrus note\n")
	res, err := f.st.Write(f.ctx, gitstore.WriteInput{Path: "/creds.md", Content: "the code is ocelot\n", Actor: actor})
	if err != nil {
		t.Fatal(err)
	}
	f.expect("ocelot", "/creds.md")
	storeID := f.st.ID()
	f.close()

	g := openFixture(t, dir, storeID, Options{Logger: quietLog})
	g.svc.Close() // the store alone: no indexer sees what happens next
	g.svc = nil
	g.write("/creds.md", "the code is in the vault\n")
	red, err := g.st.Redact(g.ctx, gitstore.RedactInput{VersionID: res.Version.ID, Actor: actor})
	if err != nil {
		t.Fatal(err)
	}
	g.close()

	h := openFixture(t, dir, storeID, opts)
	h.expect("ocelot")
	h.expect("vault", "/creds.md")
	h.expect("walrus", "/notes/keep.md")
	if got := h.search("vault").Commit; got != red.NewHead {
		t.Errorf("index at %s, want the new head %s", got, red.NewHead)
	}
	if strings.Contains(logs.String(), "rebuilding") {
		t.Errorf("the index was rebuilt after the redaction:\n%s", logs.String())
	}
}
