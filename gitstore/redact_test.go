package gitstore

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// allObjects prints every object of a repository, loose and packed, reachable or not.
func allObjects(t *testing.T, repoPath string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", repoPath, "cat-file", "--batch-all-objects", "--batch").CombinedOutput()
	if err != nil {
		t.Fatalf("git cat-file: %v\n%s", err, out)
	}
	return string(out)
}

// redactChecked redacts version id of s as apiActor, failing the test if that fails, and
// checks that an object of the repository holds word (a part of the content) afterwards
// exactly when remains is true.
func redactChecked(t *testing.T, s *Store, id, word string, remains bool) RedactResult {
	t.Helper()
	res, err := s.Redact(context.Background(), RedactInput{VersionID: id, Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Contains(allObjects(t, s.RepoPath()), word); got != remains {
		t.Errorf("an object of the repository holds %q after the redaction: %v, want %v", word, got, remains)
	}
	return res
}

// versionsOf lists every version of a store, oldest first, with all that the API shows of
// it (the commit aside, which a redaction changes).
func versionsOf(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	f := VersionFilter{Limit: 1000, WithContent: true}
	for {
		page, err := s.Versions(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Versions {
			line := strings.Join([]string{v.ID, v.MemoryID, string(v.Operation), v.Path, deref(v.Content), v.ContentSHA256,
				itoa(v.SizeBytes), string(v.CreatedBy.Type), v.CreatedBy.ID, v.CreatedBy.Name, v.CreatedBy.Email,
				v.CreatedBy.APIKeyID, v.CreatedAt.Format(time.RFC3339Nano)}, "|")
			if v.RedactedAt != nil {
				line += "|redacted " + v.RedactedAt.Format(time.RFC3339Nano) + " " + string(v.RedactedBy.Type) + " " + v.RedactedBy.ID
			}
			out = append([]string{line}, out...)
		}
		if page.NextCursor == "" {
			return out
		}
		f.Cursor = page.NextCursor
	}
}

// reopen closes data directory d and opens it again, as after a restart, with store id.
func reopen(t *testing.T, d *DataDir, dir, id string) (*DataDir, *Store) {
	t.Helper()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Store(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return d, s
}

// redactedHistory is versionsOf's lines as they must be after version v's redaction: the
// same, but for v's path, content, hash and size, and who redacted it when.
func redactedHistory(before []string, v Version) []string {
	want := append([]string(nil), before...)
	for i, line := range want {
		if strings.HasPrefix(line, v.ID+"|") {
			f := strings.Split(line, "|")
			f[3], f[4], f[5], f[6] = "", "<nil>", "", "0"
			want[i] = strings.Join(f, "|") + "|redacted " + v.RedactedAt.Format(time.RFC3339Nano) + " " +
				string(v.RedactedBy.Type) + " " + v.RedactedBy.ID
		}
	}
	return want
}

func sameHistory(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got %s\nwant %s", what, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

// TestRedact redacts a version whose content lives on through later commits, some made
// with plain git, and checks that the content is in no object of the repository, that
// every id, actor and time stays, and that the catalog updated in place is the one a
// rebuild derives from the new history, also after the data directory is opened again.
func TestRedact(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := Open(ctx, dir, Options{Clock: tickClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Close() }()
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "redact", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "the vault code is 4471-SWORDFISH\n"
	mustWrite(t, s, "/notes/keep.md", "keep me\n", apiActor)
	leak := mustWrite(t, s, "/creds/vault.md", secret, sessionActor)
	id := leak.Memory.ID
	mustWrite(t, s, "/notes/other.md", "other\n", apiActor)

	// People edit a clone while the secret is there: their commits hold it too.
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	writeFile(t, filepath.Join(wt, "people/ann.md"), "likes tea\n")
	pushAll(t, wt, "add ann (next to creds/vault.md)")
	asOfLeak := mustWrite(t, s, "/notes/keep.md", "keep me, edited\n", apiActor).Version.CreatedAt

	fixed := mustWrite(t, s, "/creds/vault.md", "rotated; ask the admin\n", apiActor)
	writeFile(t, filepath.Join(wt, "people/ann.md"), "likes green tea\n")
	gitIn(t, wt, "pull", "-q", "--ff-only")
	writeFile(t, filepath.Join(wt, "people/ann.md"), "likes green tea\n")
	gitIn(t, wt, "commit", "-qam", "ann: green tea")
	gitIn(t, wt, "push", "-q", "origin", "main")
	mustWrite(t, s, "/notes/other.md", "other, later\n", apiActor)

	if !strings.Contains(allObjects(t, s.RepoPath()), strings.TrimSpace(secret)) {
		t.Fatal("the test's secret is not in the repository to begin with")
	}
	before := versionsOf(t, s)

	// The memory's current version cannot be redacted.
	if _, err := s.Redact(ctx, RedactInput{VersionID: fixed.Version.ID, Actor: apiActor}); !IsKind(err, KindInvalid) ||
		!strings.Contains(err.Error(), "update or delete the memory first") {
		t.Fatalf("redact of the current version: %v, want a clear refusal", err)
	}
	if _, err := s.Redact(ctx, RedactInput{VersionID: "memver_01NOSUCHVERSION0000000000", Actor: apiActor}); !IsKind(err, KindNotFound) {
		t.Fatalf("redact of an unknown version: %v", err)
	}
	if _, err := s.Redact(ctx, RedactInput{VersionID: leak.Version.ID, Actor: sessionActor}); !IsKind(err, KindInvalid) {
		t.Fatalf("redact by a session: %v", err)
	}
	sameHistory(t, "versions after refused redactions", versionsOf(t, s), before)

	oldHead := s.Head()
	res, err := s.Redact(ctx, RedactInput{VersionID: leak.Version.ID, Actor: bobActor})
	if err != nil {
		t.Fatal(err)
	}
	if res.OldHead != oldHead || res.NewHead != s.Head() || res.NewHead == oldHead || res.Rewritten < 5 || res.ContentRemains {
		t.Errorf("redact result %+v (head was %s, is %s)", res, oldHead, s.Head())
	}
	v := res.Version
	if v.ID != leak.Version.ID || v.Path != "" || v.Content != nil || v.ContentSHA256 != "" || v.SizeBytes != 0 ||
		v.RedactedAt == nil || v.RedactedBy == nil || *v.RedactedBy != (Actor{Type: UserActor, ID: bobActor.ID}) ||
		v.CreatedBy.ID != sessionActor.ID || !v.CreatedAt.Equal(leak.Version.CreatedAt) {
		t.Errorf("redacted version %+v", v)
	}

	// Nothing else changed: the redacted version's line is the only difference.
	after := versionsOf(t, s)
	sameHistory(t, "versions after the redaction", after, redactedHistory(before, v))

	objs := allObjects(t, s.RepoPath())
	if strings.Contains(objs, "SWORDFISH") {
		t.Error("the redacted content is still in an object of the repository")
	}
	if !strings.Contains(objs, "likes green tea") || !strings.Contains(objs, "rotated; ask the admin") {
		t.Error("content that was not redacted is gone")
	}
	fsck(t, s)
	log := gitIn(t, s.RepoPath(), "log", "--format=%B", "main")
	if !strings.Contains(log, "Gitmem-Redacted: "+leak.Version.ID+" user_actor "+bobActor.ID) ||
		!strings.Contains(log, "Gitmem-Derived-From: ") || !strings.Contains(log, "create [redacted path]") {
		t.Errorf("rewritten history does not record the redaction:\n%s", log)
	}

	// The memory reads as before; as of a time the redacted version was current, its
	// content is the marker.
	if got := contentOf(t, s, id); got != "rotated; ask the admin\n" {
		t.Errorf("current content %q", got)
	}
	snap, err := s.AtTime(ctx, asOfLeak)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := snap.Get(ctx, id, true); err != nil || *m.Content != redactedContent || m.Path != "/creds/vault.md" {
		t.Errorf("as of the leak: %+v, %v", m, err)
	}
	if m, err := snap.GetByPath(ctx, "/notes/keep.md", true); err != nil || *m.Content != "keep me, edited\n" {
		t.Errorf("as of the leak, another memory: %+v, %v", m, err)
	}
	if _, err := s.AtCommit(ctx, oldHead); err != nil {
		t.Errorf("as of the old head (rewritten): %v", err)
	}
	// Views derived from main follow through the rewrite without starting over.
	if head, changes, err := s.Changes(ctx, oldHead); err != nil || head != res.NewHead || len(changes) != 0 {
		t.Errorf("changes since the old head: %s %v %v", head, changes, err)
	}
	if _, err := s.Restore(ctx, RestoreInput{VersionID: leak.Version.ID, Actor: apiActor}); !IsKind(err, KindInvalid) {
		t.Errorf("restore of a redacted version: %v", err)
	}

	// Twice is the same answer, and changes nothing.
	again, err := s.Redact(ctx, RedactInput{VersionID: leak.Version.ID, Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	if again.OldHead != "" || again.Rewritten != 0 || !again.Version.RedactedAt.Equal(*v.RedactedAt) || *again.Version.RedactedBy != *v.RedactedBy || s.Head() != res.NewHead {
		t.Errorf("second redaction %+v", again)
	}

	// A rebuild from the new history gives the catalog that was updated in place, and so does
	// opening the data directory again.
	if err := reindexStore(ctx, s); err != nil {
		t.Fatal(err)
	}
	sameHistory(t, "versions after a rebuild", versionsOf(t, s), after)
	d, s = reopen(t, d, dir, s.ID())
	sameHistory(t, "versions after reopening", versionsOf(t, s), after)
	if strings.Contains(allObjects(t, s.RepoPath()), "SWORDFISH") {
		t.Error("the redacted content came back")
	}
}

// TestRedactDeletedMemory redacts the last content of a memory that was deleted since, and
// a deletion version, in an archived store.
func TestRedactDeletedMemory(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	w := mustWrite(t, s, "/tmp/token.md", "token abc-PLUTONIUM-123\n", apiActor)
	mustWrite(t, s, "/a.md", "a\n", apiActor)
	del, err := s.Delete(ctx, DeleteInput{ID: w.Memory.ID, Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	// An archived store is read-only, but a leak must be removable from it.
	if _, err := s.Archive(ctx, apiActor); err != nil {
		t.Fatal(err)
	}
	before := versionsOf(t, s)
	first := redactChecked(t, s, w.Version.ID, "PLUTONIUM", false)
	res, err := s.Redact(ctx, RedactInput{VersionID: del.ID, Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version.Path != "" || res.Version.RedactedAt == nil || res.Version.Operation != OpDeleted {
		t.Errorf("redacted deletion %+v", res.Version)
	}
	if log := gitIn(t, s.RepoPath(), "log", "--format=%s", "main"); strings.Contains(log, "/tmp/token.md") {
		t.Errorf("the path is still in a redacted version's subject:\n%s", log)
	}
	after := versionsOf(t, s)
	sameHistory(t, "versions after the redactions", after, redactedHistory(redactedHistory(before, first.Version), res.Version))
	if err := reindexStore(ctx, s); err != nil {
		t.Fatal(err)
	}
	sameHistory(t, "versions after a rebuild", versionsOf(t, s), after)
	fsck(t, s)
}

const (
	redactCrashDirEnv     = "GITMEM_REDACT_CRASH_DIR"
	redactCrashStoreEnv   = "GITMEM_REDACT_CRASH_STORE"
	redactCrashVersionEnv = "GITMEM_REDACT_CRASH_VERSION"
)

// TestRedactCrashChild is the child of TestRedactFinishesInterruptedPrune: it redacts a
// version and, once main has moved, says so and waits to be killed.
func TestRedactCrashChild(t *testing.T) {
	dir := os.Getenv(redactCrashDirEnv)
	if dir == "" {
		t.Skip("run by TestRedactFinishesInterruptedPrune only")
	}
	ctx := context.Background()
	d, err := Open(ctx, dir, Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	s, err := d.Store(ctx, os.Getenv(redactCrashStoreEnv))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	afterPublish = func() {
		fmt.Println("published")
		select {}
	}
	_, err = s.Redact(ctx, RedactInput{VersionID: os.Getenv(redactCrashVersionEnv), Actor: apiActor})
	fmt.Println("error: the redaction returned", err)
	os.Exit(2)
}

// TestRedactFinishesInterruptedPrune redacts content that a person pushed (so it is a loose
// object, and a ref other than main points at its commit) in a process that is killed
// (SIGKILL) once main has moved, before the old history is pruned. Opened again, the store
// finishes the pruning: no object holds the content, and the other ref has moved onto the
// new history. Redacting the version again answers as for a redacted version.
func TestRedactFinishesInterruptedPrune(t *testing.T) {
	if os.Getenv(redactCrashDirEnv) != "" {
		return
	}
	ctx := context.Background()
	d, s, m, pushed := redactionFixture(t)
	defer func() { d.Close() }()
	dir, id := filepath.Dir(filepath.Dir(s.RepoPath())), s.ID()
	before := versionsOf(t, s)
	oldHead := s.Head()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestRedactCrashChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), redactCrashDirEnv+"="+dir, redactCrashStoreEnv+"="+id, redactCrashVersionEnv+"="+m.VersionID)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if strings.TrimSpace(line) != "published" {
		t.Fatalf("the child said %q %v", line, err)
	}
	repoPath := s.RepoPath()
	if gitIn(t, repoPath, "rev-parse", "main") == oldHead+"\n" || !strings.Contains(allObjects(t, repoPath), "MONGOOSE") {
		t.Fatal("the child was not killed between moving main and pruning: the test does not test the pruning")
	}

	d, err = Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s, err = d.Store(ctx, id); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(allObjects(t, repoPath), "MONGOOSE") {
		t.Error("the content is still in the repository after the store was opened again")
	}
	if out, err := exec.Command("git", "-C", repoPath, "cat-file", "-e", pushed).CombinedOutput(); err == nil {
		t.Errorf("the pushed commit of the old history is still in the repository (%s)", out)
	}
	if to, _, err := s.RewrittenTo(ctx, pushed); err != nil || gitIn(t, repoPath, "rev-parse", "refs/remotes/team/main") != to+"\n" {
		t.Errorf("refs/remotes/team/main is not at %s, the rewrite of %s (%v)", to, pushed, err)
	}
	res, err := s.Redact(ctx, RedactInput{VersionID: m.VersionID, Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	if res.OldHead != "" || res.Version.RedactedAt == nil || res.ContentRemains {
		t.Errorf("second redaction %+v", res)
	}
	sameHistory(t, "versions after the redaction", versionsOf(t, s), redactedHistory(before, res.Version))
	if got := contentOf(t, s, m.ID); got != "key: revoked\n" {
		t.Errorf("content %q", got)
	}
	fsck(t, s)
}

// TestRedactAcrossMerge redacts content that a side branch, merged into main by a person,
// also holds: the side branch's commits are rewritten too and the merge keeps both parents.
func TestRedactAcrossMerge(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	leak := mustWrite(t, s, "/s.md", "secret WOMBAT-5\n", apiActor)
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	gitIn(t, wt, "checkout", "-q", "-b", "side")
	writeFile(t, filepath.Join(wt, "side.md"), "from the side branch\n")
	gitIn(t, wt, "add", "-A")
	gitIn(t, wt, "commit", "-qm", "side work")
	mustWrite(t, s, "/s.md", "no secret here\n", apiActor)
	mustWrite(t, s, "/x.md", "x\n", apiActor)
	gitIn(t, wt, "checkout", "-q", "main")
	gitIn(t, wt, "pull", "-q", "--ff-only")
	gitIn(t, wt, "merge", "-q", "--no-ff", "-m", "merge side", "side")
	gitIn(t, wt, "push", "-q", "origin", "main")
	mustWrite(t, s, "/x.md", "x, later\n", apiActor)
	if _, err := s.GetByPath(ctx, "/side.md", false); err != nil {
		t.Fatalf("the merged memory: %v", err)
	}
	before := versionsOf(t, s)

	res := redactChecked(t, s, leak.Version.ID, "WOMBAT", false)
	parents := strings.Fields(gitIn(t, s.RepoPath(), "log", "-1", "--format=%P", "--merges", "main"))
	if len(parents) != 2 {
		t.Fatalf("the merge has parents %v", parents)
	}
	side := gitIn(t, s.RepoPath(), "show", parents[1]+":s.md")
	if side != redactedContent {
		t.Errorf("the side branch's commit holds %q at /s.md", side)
	}
	after := versionsOf(t, s)
	sameHistory(t, "versions after the redaction", after, redactedHistory(before, res.Version))
	if err := reindexStore(ctx, s); err != nil {
		t.Fatal(err)
	}
	sameHistory(t, "versions after a rebuild", versionsOf(t, s), after)
	if res.Rewritten < 5 {
		t.Errorf("rewrote %d commits", res.Rewritten)
	}
	fsck(t, s)
}

func TestScrubPath(t *testing.T) {
	for _, c := range []struct{ msg, path, want string }{
		{"create /a.md", "/a.md", "create [redacted path]"},
		{"rename /data.md to /a.md", "/a.md", "rename /data.md to [redacted path]"},
		{"update /x/a.md and a.md, a.md.", "/a.md", "update /x/a.md and [redacted path], [redacted path]."},
		{"fix creds/db.md (was creds/db.md2)", "/creds/db.md", "fix [redacted path] (was creds/db.md2)"},
		{"touch a.md a.md", "/a.md", "touch [redacted path] [redacted path]"},
	} {
		if got := scrubPath(c.msg, c.path); got != c.want {
			t.Errorf("scrubPath(%q, %q) = %q, want %q", c.msg, c.path, got, c.want)
		}
	}
}

// TestRedactDuringWrites redacts while writers write: every acknowledged write is there
// after, on top of the rewritten history or under it, and the catalog is the one a rebuild
// gives.
func TestRedactDuringWrites(t *testing.T) {
	// With the default pack limit, and with a limit of 2 that has a merge run beside the
	// writer after nearly every group: a merge must never put the redacted content back.
	for _, opts := range []Options{{}, {MaxPacks: 2}} {
		t.Run(fmt.Sprintf("max_packs=%d", opts.MaxPacks), func(t *testing.T) { redactDuringWrites(t, opts) })
	}
}

func redactDuringWrites(t *testing.T, opts Options) {
	ctx := context.Background()
	d := newTestDataDir(t, opts)
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "redact", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	leak := mustWrite(t, s, "/leak.md", "secret KESTREL-31\n", apiActor)
	mustWrite(t, s, "/leak.md", "clean\n", apiActor)
	const writers, writes = 6, 25
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < writes; i++ {
				if _, err := s.Write(ctx, WriteInput{Path: fmt.Sprintf("/w%d.md", w), Content: fmt.Sprintf("write %d\n", i), Actor: apiActor}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	if _, err := s.Redact(ctx, RedactInput{VersionID: leak.Version.ID, Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for w := 0; w < writers; w++ {
		m, err := s.GetByPath(ctx, fmt.Sprintf("/w%d.md", w), true)
		if err != nil || *m.Content != fmt.Sprintf("write %d\n", writes-1) {
			t.Errorf("writer %d: %+v %v", w, m, err)
		}
	}
	if n := len(versionsOf(t, s)); n != 2+writers*writes {
		t.Errorf("%d versions, want %d", n, 2+writers*writes)
	}
	if strings.Contains(allObjects(t, s.RepoPath()), "KESTREL") {
		t.Error("the content is still in the repository")
	}
	after := versionsOf(t, s)
	if err := reindexStore(ctx, s); err != nil {
		t.Fatal(err)
	}
	sameHistory(t, "versions after a rebuild", versionsOf(t, s), after)
	fsck(t, s)
}

// TestRedactDuringPushes pushes commits made with git while a long redaction runs: a push
// that lands while the redaction rewrites makes it rewrite again on top, and every push that
// git reported done is in the store afterwards.
func TestRedactDuringPushes(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	leak := mustWrite(t, s, "/leak.md", "secret HERON-77\n", apiActor)
	mustWrite(t, s, "/leak.md", "clean\n", apiActor)
	fill(t, s, 1500, benchPath)
	wt := filepath.Join(t.TempDir(), "clone")
	// No automatic gc in the clone: a detached one, started by a fetch, may prune the clone's
	// empty object folders while the next commit writes into one (CI once failed with "unable
	// to create temporary file"). Not a local clone, which copies the pack files one by one:
	// a merge of the fill's packs that removes one meanwhile failed it ("failed to copy
	// file"); git's transport finds the objects in the merged pack instead.
	gitIn(t, ".", "clone", "-q", "--no-local", "-c", "gc.auto=0", s.RepoPath(), wt)

	done := make(chan struct{})
	pushed := make(chan []string, 1)
	go func() {
		var ok []string
		defer func() { pushed <- ok }()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			// Follow main, rewritten or not, as a person would after a failed push.
			if exec.Command("git", "-C", wt, "fetch", "-q", "origin").Run() != nil ||
				exec.Command("git", "-C", wt, "reset", "-q", "--hard", "origin/main").Run() != nil {
				continue
			}
			name := fmt.Sprintf("pushed/p%03d.md", i)
			writeFile(t, filepath.Join(wt, name), fmt.Sprintf("push %d\n", i))
			gitIn(t, wt, "add", "-A")
			gitIn(t, wt, "commit", "-qm", "add "+name)
			if exec.Command("git", "-C", wt, "push", "-q", "origin", "main").Run() == nil {
				ok = append(ok, "/"+name)
			}
		}
	}()
	res, err := s.Redact(ctx, RedactInput{VersionID: leak.Version.ID, Actor: apiActor})
	close(done)
	ok := <-pushed
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range ok {
		if _, err := s.GetByPath(ctx, p, false); err != nil {
			t.Errorf("pushed %s is lost: %v", p, err)
		}
	}
	if strings.Contains(allObjects(t, s.RepoPath()), "HERON") {
		t.Error("the content is still in the repository")
	}
	t.Logf("%d pushes landed around a redaction of %d commits", len(ok), res.Rewritten)
	fsck(t, s)
}

// TestRedactRewritesEveryRef: the branches of the repository besides main that reach the
// redacted content (proposal branches, pushed or made by the review) are rewritten with
// main's rewrite map and moved, a ref that moves onto the old history while the redaction
// runs is deleted, and nothing holds the content afterwards, so the result does not say
// that it remains.
func TestRedactRewritesEveryRef(t *testing.T) {
	s := newTestStore(t)
	leak := mustWrite(t, s, "/creds.md", "launch code ZEBRA-PLUTO-4471\n", apiActor)
	repo := s.RepoPath()
	// A proposal branch on top of the content: a commit that adds a file.
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", repo, wt)
	writeFile(t, filepath.Join(wt, "plan.md"), "plan\n")
	gitIn(t, wt, "add", "-A")
	gitIn(t, wt, "commit", "-qm", "plan")
	gitIn(t, wt, "push", "-q", "origin", "HEAD:refs/heads/proposals/notes")
	// A branch at a commit of main's own history.
	gitIn(t, repo, "update-ref", "refs/heads/proposals/prop_at_main", "main")
	mustWrite(t, s, "/creds.md", "in the vault\n", apiActor)
	mustWrite(t, s, "/x.md", "x\n", apiActor)
	old := strings.TrimSpace(gitIn(t, repo, "rev-parse", "refs/heads/proposals/notes~1"))

	// A branch that comes onto the old history once the rewrite has listed the refs.
	afterPublish = func() {
		late := strings.TrimSpace(gitIn(t, repo, "commit-tree", "-p", old, "-m", "late", old+"^{tree}"))
		gitIn(t, repo, "update-ref", "refs/heads/proposals/late", late)
	}
	defer func() { afterPublish = nil }()
	if res := redactChecked(t, s, leak.Version.ID, "ZEBRA", false); res.ContentRemains {
		t.Error("the result says that the content remains")
	}
	refs := strings.TrimSpace(gitIn(t, repo, "for-each-ref", "--format=%(refname)"))
	if refs != "refs/heads/main\nrefs/heads/proposals/notes\nrefs/heads/proposals/prop_at_main" {
		t.Errorf("refs after the redaction:\n%s", refs)
	}
	if got := gitIn(t, repo, "show", "refs/heads/proposals/notes:creds.md"); got != redactedContent {
		t.Errorf("the proposal branch holds %q at /creds.md", got)
	}
	if got := gitIn(t, repo, "show", "refs/heads/proposals/notes:plan.md"); got != "plan\n" {
		t.Errorf("the proposal branch holds %q at /plan.md", got)
	}
	// The branch's base is main's rewritten commit: the same rewrite.
	if base, main := gitIn(t, repo, "merge-base", "refs/heads/proposals/notes", "main"), gitIn(t, repo, "rev-parse", "refs/heads/proposals/notes~1"); base != main {
		t.Errorf("the branch leaves main at %s, not at its parent %s", base, main)
	}
	fsck(t, s)
}

// TestRedactContentRemains: the result says that the content remains when another file
// holds the very same bytes, and it does remain, as theirs.
func TestRedactContentRemains(t *testing.T) {
	s := newTestStore(t)
	leak := mustWrite(t, s, "/creds.md", "launch code ZEBRA-PLUTO-4471\n", apiActor)
	mustWrite(t, s, "/copy.md", "launch code ZEBRA-PLUTO-4471\n", apiActor)
	mustWrite(t, s, "/creds.md", "in the vault\n", apiActor)
	if res := redactChecked(t, s, leak.Version.ID, "ZEBRA", true); !res.ContentRemains {
		t.Errorf("content remains: %v", res.ContentRemains)
	}
}

// TestRedactMergeVersion redacts a version that a merge made (both sides changed the memory,
// and the merge joined the texts): its commit is the merge, whose Gitmem-Merge-Live trailer
// names the memory's path. The trailer keeps it, so that a rebuild reads the merge again.
func TestRedactMergeVersion(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	d := openDir(t, data)
	defer func() { d.Close() }()
	s := mustCreate(t, d, "test")
	mustWrite(t, s, "/shared.md", "one\ntwo\nthree\nfour\nfive\n", apiActor)
	f, dir := openedFork(t, d, s)
	mustWrite(t, f, "/shared.md", "one WOMBAT-5\ntwo\nthree\nfour\nfive\n", apiActor)
	if err := f.CloseFork(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, "/shared.md", "one\ntwo\nthree\nfour\nfive, here\n", apiActor)
	head, err := s.TakeBranch(ctx, dir, "refs/heads/side")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Integrate(ctx, "side", head)
	if err != nil || len(res.TextMerged) != 1 {
		t.Fatalf("merge: %+v %v; want /shared.md merged as text", res, err)
	}
	merged, err := s.GetByPath(ctx, "/shared.md", false)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.Version(ctx, merged.VersionID, false); err != nil || v.Commit != res.After {
		t.Fatalf("the merged version %+v (%v) is not the merge's %s", v, err, res.After)
	}
	mustWrite(t, s, "/shared.md", "one\ntwo\nthree\nfour\nfive, here\n", apiActor)
	before := versionsOf(t, s)
	red := redactChecked(t, s, merged.VersionID, "WOMBAT", true) // the side's own version holds it still
	after := versionsOf(t, s)
	sameHistory(t, "versions after the redaction", after, redactedHistory(before, red.Version))
	if err := reindexStore(ctx, s); err != nil {
		t.Fatalf("rebuild the redacted history: %v", err)
	}
	// In another order: a rebuild reads the merge's first parent (the side) first, where the
	// catalog had read main's commits as they came.
	rebuilt := versionsOf(t, s)
	slices.Sort(rebuilt)
	slices.Sort(after)
	sameHistory(t, "versions after a rebuild", rebuilt, after)
	repo := s.RepoPath()
	msg := gitIn(t, repo, "log", "-1", "--format=%B", "main^")
	if !strings.Contains(msg, "Gitmem-Merge-Live: ") || !strings.Contains(msg, " /shared.md") {
		t.Errorf("the merge's message:\n%s", msg)
	}
	fsck(t, s)

	// A history that a redaction scrubbed before it left merge trailers alone: the rebuild
	// (at open, the catalog gone) takes the memory's path as the merge's sides left it.
	d, s = rebuildScrubbedMerge(t, data, d, s, msg, "/shared.md")
	sameHistory(t, "versions after a rebuild of the scrubbed trailer", anonymousHistory(versionsOf(t, s)), anonymousHistory(after))
}

// rebuildScrubbedMerge makes the history of s what a redaction made of it before it left merge
// trailers alone: in the merge before main's last commit (message msg), path is replaced in the
// trailers too. It closes d, rewrites the two commits with git, and opens the data directory
// data again without the catalog, which is rebuilt from that history.
func rebuildScrubbedMerge(t *testing.T, data string, d *DataDir, s *Store, msg, path string) (*DataDir, *Store) {
	t.Helper()
	ctx := context.Background()
	repo, id := s.RepoPath(), s.ID()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	parents := strings.Fields(gitIn(t, repo, "log", "-1", "--format=%P", "main^"))
	scrubbed := strings.TrimSpace(gitIn(t, repo, "commit-tree", "main^^{tree}", "-p", parents[0], "-p", parents[1],
		"-m", strings.ReplaceAll(msg, " "+path, " "+redactedPath)))
	last := strings.TrimSpace(gitIn(t, repo, "commit-tree", "main^{tree}", "-p", scrubbed, "-m", gitIn(t, repo, "log", "-1", "--format=%B", "main")))
	gitIn(t, repo, "update-ref", "refs/heads/main", last)
	if err := os.Remove(d.Layout().CatalogFile(id)); err != nil {
		t.Fatal(err)
	}
	d, err := Open(ctx, data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s, err = d.Store(ctx, id); err != nil {
		t.Fatalf("rebuild a history whose merge trailer names %s: %v", redactedPath, err)
	}
	return d, s
}

// anonymousHistory is versionsOf's lines without the authors' names and emails (commits made
// anew with git are Ann's), in sorted order.
func anonymousHistory(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		f := strings.Split(l, "|")
		f[9], f[10] = "", ""
		out[i] = strings.Join(f, "|")
	}
	slices.Sort(out)
	return out
}

// A commit made with git that changes several memories makes several versions, numbered in
// path order. Redacting one that is not the commit's first rewrites the commit: every version
// of it, the ones numbered before too, then names the new commit, as a rebuild has it.
func TestRedactPlainCommitOfSeveralVersions(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	writeFile(t, filepath.Join(wt, "a.md"), "alpha\n")
	writeFile(t, filepath.Join(wt, "b.md"), "a secret\n")
	writeFile(t, filepath.Join(wt, ".gitmem/store.json"), strings.Replace(gitIn(t, wt, "show", "HEAD:.gitmem/store.json"), `"description": ""`, `"description": "d"`, 1))
	pushAll(t, wt, "two memories")
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, WriteInput{Path: "/b.md", Content: "no secret\n", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Versions(ctx, VersionFilter{PathPrefix: "/b.md", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	redactAsRebuilt(t, s, p.Versions[len(p.Versions)-1].ID)
}

// A merge-made version of a memory that the merged side moved while main changed it (the
// change followed the move), redacted before redactions left merge trailers alone: a rebuild
// reads the side (the merge's first parent) first, then main's change at the old path, so
// the memory's path "as the sides left it" is the old one, which the merge freed. The
// rebuild must still take the path that the merge's tree holds the marker at.
func TestRedactMergeVersionMoved(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	d := openDir(t, data)
	defer func() { d.Close() }()
	s := mustCreate(t, d, "test")
	mustWrite(t, s, "/shared.md", "one\ntwo\nthree\nfour\nfive\n", apiActor)
	f, dir := openedFork(t, d, s)
	if _, err := f.MovePath(ctx, MovePathInput{From: "/shared.md", To: "/moved.md", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	if err := f.CloseFork(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, "/shared.md", "one WOMBAT-5\ntwo\nthree\nfour\nfive\n", apiActor)
	head, err := s.TakeBranch(ctx, dir, "refs/heads/side")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Integrate(ctx, "side", head)
	if err != nil || len(res.TextMerged) != 1 {
		t.Fatalf("merge: %+v %v; want /moved.md merged as text", res, err)
	}
	merged, err := s.GetByPath(ctx, "/moved.md", false)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, "/moved.md", "one\ntwo\nthree\nfour\nfive\n", apiActor)
	if _, err := s.Redact(ctx, RedactInput{VersionID: merged.VersionID, Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	after := versionsOf(t, s)
	repo := s.RepoPath()
	msg := gitIn(t, repo, "log", "-1", "--format=%B", "main^")
	if !strings.Contains(msg, "Gitmem-Merge-Live: ") || !strings.Contains(msg, " /moved.md") {
		t.Fatalf("the merge's message:\n%s", msg)
	}
	d, s = rebuildScrubbedMerge(t, data, d, s, msg, "/moved.md")
	sameHistory(t, "versions after a rebuild of the scrubbed trailer", anonymousHistory(versionsOf(t, s)), anonymousHistory(after))
}

// A rename made with plain git (git mv: the same blob at another path), and a redaction of
// the version before it or of the version it made: the marker then stands on one side of
// the rename only, and a rebuild, which pairs a removal with an addition by their content
// (plainRenames), would read a deletion and a new memory where the catalog, updated in place,
// keeps one memory moved. The rewritten rename records the pair (Gitmem-Renamed); a second
// redaction of the same history records it once.
func TestRedactAroundPlainRename(t *testing.T) {
	for _, redact := range []string{"before", "rename", "both"} {
		t.Run(redact, func(t *testing.T) {
			ctx := context.Background()
			s := newTestStore(t)
			first := mustWrite(t, s, "/d/c.md", "a secret\n", apiActor)
			mustWrite(t, s, "/d/other file.md", "other\n", apiActor)
			commitWithGit(t, s, "renamed", []string{"mv", "d/c.md", "a b.md"}, []string{"mv", "d/other file.md", "d/moved.md"})
			m, err := s.GetByPath(ctx, "/a b.md", false)
			if err != nil || m.ID != first.Memory.ID {
				t.Fatalf("the memory at /a b.md is %+v (%v), want %s moved there", m, err, first.Memory.ID)
			}
			mustWrite(t, s, "/a b.md", "no secret now\n", apiActor) // a current version is not redacted
			var ids []string
			if redact != "rename" {
				ids = append(ids, first.Version.ID)
			}
			if redact != "before" {
				p, err := s.Versions(ctx, VersionFilter{PathPrefix: "/a b.md", Limit: 2})
				if err != nil || len(p.Versions) != 2 {
					t.Fatalf("the rename's version: %+v %v", p, err)
				}
				ids = append(ids, p.Versions[1].ID)
			}
			redactAsRebuilt(t, s, ids...)
			if m, err := s.GetByPath(ctx, "/a b.md", false); err != nil || m.ID != first.Memory.ID {
				t.Fatalf("after a rebuild, the memory at /a b.md is %+v (%v), want %s", m, err, first.Memory.ID)
			}
			log := gitIn(t, s.RepoPath(), "log", "--format=%B", "main")
			if n := strings.Count(log, trailerRenamed+": "); n != 1 {
				t.Errorf("history holds %d %s trailers, want 1:\n%s", n, trailerRenamed, log)
			}
		})
	}
}

// Two versions of a memory, one after the other at one path, both redacted: the second's
// commit then holds the marker where its parent holds it too, and changes nothing there.
// A rebuild must still read the version that the commit made, of a commit of gitmem's and of
// one made with git alike.
func TestRedactConsecutiveVersions(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	one := mustWrite(t, s, "/a.md", "secret one\n", apiActor)
	two := mustWrite(t, s, "/a.md", "secret two\n", apiActor)
	mustWrite(t, s, "/a.md", "no secret\n", apiActor)
	// And two made with git, in commits that change another file too.
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	for i, content := range []string{"secret three\n", "secret four\n", "fine\n"} {
		writeFile(t, filepath.Join(wt, "a.md"), content)
		writeFile(t, filepath.Join(wt, "b.md"), fmt.Sprint(i))
		pushAll(t, wt, "with git")
	}
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := s.Versions(ctx, VersionFilter{PathPrefix: "/a.md", Limit: 10})
	if err != nil || len(p.Versions) != 6 {
		t.Fatalf("versions of /a.md: %+v %v", p, err)
	}
	redactAsRebuilt(t, s, one.Version.ID, two.Version.ID, p.Versions[2].ID, p.Versions[1].ID)
}

// redactAsRebuilt redacts the versions ids of s, and fails t unless the catalog, updated in
// place, is then as a rebuild from history makes it.
func redactAsRebuilt(t *testing.T, s *Store, ids ...string) {
	t.Helper()
	ctx := context.Background()
	for _, id := range ids {
		if _, err := s.Redact(ctx, RedactInput{VersionID: id, Actor: apiActor}); err != nil {
			t.Fatal(err)
		}
	}
	if diff := apartFromRebuilt(t, s); diff != "" {
		t.Fatalf("the catalog after the redactions differs from one rebuilt from history:\n%s", diff)
	}
}

// apartFromRebuilt rebuilds the catalog of s from history and returns the lines in which
// the catalog before differs from it ("" if none).
func apartFromRebuilt(t *testing.T, s *Store) string {
	t.Helper()
	got := dumpCatalog(t, s)
	if err := reindexStore(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if want := dumpCatalog(t, s); got != want {
		return linesApart(got, want)
	}
	return ""
}

// A rename made with plain git whose both sides are redacted, in a commit that also deletes
// a memory whose last version is redacted: three markers, so content pairs the rename's
// addition with the first removal by path (/b.md). The Gitmem-Renamed trailer that the
// redaction of the version before the rename records must survive the redaction of the
// rename's own version, whose path the trailer names: scrubbed to "[redacted path]", it
// paired nothing, and a rebuild moved b's memory to /z.md.
func TestRedactKeepsRenamedTrailer(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	b := mustWrite(t, s, "/b.md", "secret b\n", apiActor)
	c := mustWrite(t, s, "/d/c.md", "secret c\n", apiActor)
	commitWithGit(t, s, "b out, c moved", []string{"rm", "-q", "b.md"}, []string{"mv", "d/c.md", "z.md"})
	mustWrite(t, s, "/z.md", "fine\n", apiActor)
	p, err := s.Versions(ctx, VersionFilter{MemoryID: c.Memory.ID, Limit: 10})
	if err != nil || len(p.Versions) != 3 {
		t.Fatalf("versions of c: %+v %v", p, err)
	}
	redactAsRebuilt(t, s, b.Version.ID, c.Version.ID, p.Versions[1].ID)
	if m, err := s.GetByPath(ctx, "/z.md", false); err != nil || m.ID != c.Memory.ID {
		t.Fatalf("after a rebuild, the memory at /z.md is %+v (%v), want %s", m, err, c.Memory.ID)
	}
}

// A commit made with plain git removes /p.md and adds /q.md, other content: no rename.
// Redacting p's version before it and q's version it made puts the marker on both sides;
// a rebuild, which pairs a removal and an addition of the same content (plainRenames), read
// p's memory moved to /q.md, where the catalog, updated in place, keeps p deleted and q
// created. The marker now pairs with nothing by content: a real rename that a redaction
// touches is recorded in Gitmem-Renamed.
func TestRedactMarkersAreNoRename(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	p := mustWrite(t, s, "/p.md", "secret p\n", apiActor)
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	gitIn(t, wt, "rm", "-q", "p.md")
	writeFile(t, filepath.Join(wt, "q.md"), "secret q\n")
	pushAll(t, wt, "p out, q in")
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, "/q.md", "fine\n", apiActor)
	q, err := s.Versions(ctx, VersionFilter{PathPrefix: "/q.md", Limit: 10})
	if err != nil || len(q.Versions) != 2 {
		t.Fatalf("versions of /q.md: %+v %v", q, err)
	}
	redactAsRebuilt(t, s, p.Version.ID, q.Versions[1].ID)
}

// commitWithGit runs the git commands ops in a clone of s, commits what they did with
// message msg, pushes it to s and has s read it.
func commitWithGit(t *testing.T, s *Store, msg string, ops ...[]string) {
	t.Helper()
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	for _, op := range ops {
		gitIn(t, wt, op...)
	}
	gitIn(t, wt, "commit", "-qm", msg)
	gitIn(t, wt, "push", "-q", "origin", "main")
	if err := s.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
}
