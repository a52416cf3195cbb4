package gitstore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitIn runs the real git CLI in dir as the person Ann, and returns its output.
func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Ann Editor", "GIT_AUTHOR_EMAIL=ann@example.com",
		"GIT_COMMITTER_NAME=Ann Editor", "GIT_COMMITTER_EMAIL=ann@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// pushAll commits everything in the clone wt as Ann, with message msg, and pushes main.
func pushAll(t testing.TB, wt, msg string) {
	t.Helper()
	gitIn(t, wt, "add", "-A")
	gitIn(t, wt, "commit", "-qm", msg)
	gitIn(t, wt, "push", "-q", "origin", "main")
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// historyOf lists a store's versions, oldest first, as comparable lines.
func historyOf(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	f := VersionFilter{Limit: 1000}
	for {
		page, err := s.Versions(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Versions {
			out = append([]string{strings.Join([]string{v.ID, v.MemoryID, string(v.Operation), v.Path,
				string(v.CreatedBy.Type), v.CreatedBy.ID, v.CreatedBy.Name, v.CreatedBy.Email}, " ")}, out...)
		}
		if page.NextCursor == "" {
			return out
		}
		f.Cursor = page.NextCursor
	}
}

// TestPlainGitCommits edits a clone with the git CLI, commits without trailers, pushes, and
// checks that the store reads the commits as versions: renames keep the memory, the author
// is a user, and ids are the same after a rebuild and in another data directory.
func TestPlainGitCommits(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	res, err := s.Write(ctx, WriteInput{Path: "/notes/todo.md", Content: "buy milk\n", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	todoID := res.Memory.ID

	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	// One commit: a rename (same blob), a new nested file, and an edit in the same commit.
	gitIn(t, wt, "mv", "notes/todo.md", "notes/done.md")
	writeFile(t, filepath.Join(wt, "people/ann/profile.md"), "likes tea\n")
	writeFile(t, filepath.Join(wt, "people/bob.md"), "likes coffee\n")
	gitIn(t, wt, "add", "-A")
	gitIn(t, wt, "commit", "-qm", "reorganize notes")
	// A second commit: modify one, delete one.
	writeFile(t, filepath.Join(wt, "people/bob.md"), "likes coffee, black\n")
	gitIn(t, wt, "rm", "-q", "people/ann/profile.md")
	gitIn(t, wt, "commit", "-qam", "update bob, forget ann")
	gitIn(t, wt, "push", "-q", "origin", "main")

	// Reads see the push at once: the catalog catches up when main moved from outside.
	done, err := s.GetByPath(ctx, "/notes/done.md", true)
	if err != nil {
		t.Fatal(err)
	}
	if done.ID != todoID {
		t.Errorf("renamed memory has id %s, want %s (renames keep the id)", done.ID, todoID)
	}
	bob, err := s.GetByPath(ctx, "/people/bob.md", true)
	if err != nil || *bob.Content != "likes coffee, black\n" {
		t.Fatalf("bob: %+v, %v", bob, err)
	}
	if _, err := s.GetByPath(ctx, "/people/ann/profile.md", false); !IsKind(err, KindNotFound) {
		t.Errorf("deleted file still a memory: %v", err)
	}

	page, err := s.Versions(ctx, VersionFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range page.Versions {
		got = append(got, string(v.Operation)+" "+v.Path)
		if v.Path != "/notes/todo.md" && (v.CreatedBy.Type != UserActor || v.CreatedBy.Name != "Ann Editor" || v.CreatedBy.Email != "ann@example.com") {
			t.Errorf("version %s by %+v, want Ann as a user_actor", v.ID, v.CreatedBy)
		}
	}
	// Newest first; the versions of one commit are applied in path order, so they list in
	// reverse path order.
	want := []string{"modified /people/bob.md", "deleted /people/ann/profile.md", // second commit
		"created /people/bob.md", "created /people/ann/profile.md", "modified /notes/done.md", // first
		"created /notes/todo.md"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("versions:\n got %s\nwant %s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
	if ann := UserActorFor("Ann Editor", "ann@example.com"); page.Versions[0].CreatedBy.ID != ann.ID {
		t.Errorf("user id %s, want %s", page.Versions[0].CreatedBy.ID, ann.ID)
	}

	// gitmem writes on top of the pushed commits, and the history stays readable by git.
	if _, err := s.Write(ctx, WriteInput{Path: "/people/bob.md", Content: "likes tea now\n", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	gitIn(t, wt, "pull", "-q", "--ff-only")
	if b, _ := os.ReadFile(filepath.Join(wt, "people/bob.md")); string(b) != "likes tea now\n" {
		t.Errorf("pulled bob.md = %q", b)
	}
	log := gitIn(t, wt, "log", "-1", "--format=%an <%ae>%n%B")
	for _, w := range []string{"update /people/bob.md", "Gitmem-Operation: modified", "Gitmem-Actor: api_actor " + apiActor.ID} {
		if !strings.Contains(log, w) {
			t.Errorf("git log of a gitmem commit lacks %q:\n%s", w, log)
		}
	}

	// Every replica derives the same ids: a rebuilt catalog, and another data directory.
	before := historyOf(t, s)
	if err := reindexStore(ctx, s); err != nil {
		t.Fatal(err)
	}
	if after := historyOf(t, s); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("history changed by a rebuild:\n%s\nvs\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	other := newTestDataDir(t, Options{})
	gitIn(t, ".", "clone", "-q", "--bare", s.RepoPath(), other.repoPath(s.ID()))
	replica, err := other.Store(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if got := historyOf(t, replica); strings.Join(got, "\n") != strings.Join(before, "\n") {
		t.Errorf("a replica derived other ids:\n%s\nvs\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
	}
	fsck(t, s)
}

func reindexStore(ctx context.Context, s *Store) error {
	return s.runTask(ctx, func() error { return s.rebuild(nil) })
}

// TestPushDuringWrites pushes a commit made with git while the store's writer is busy:
// both the pushed change and every write survive, because the writer rebases onto the
// moved ref instead of overwriting it.
func TestPushDuringWrites(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, err := s.Write(ctx, WriteInput{Path: "/seed.md", Content: "seed", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	writeFile(t, filepath.Join(wt, "pushed.md"), "from git\n")
	gitIn(t, wt, "add", "-A")
	gitIn(t, wt, "commit", "-qm", "add pushed.md")

	errs := make(chan error, 1)
	go func() {
		for i := 0; i < 30; i++ {
			if _, err := s.Write(ctx, WriteInput{Path: fmt.Sprintf("/api/n%d.md", i), Content: "x", Actor: apiActor}); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	// The push may lose the race for main.lock or be rejected as non-fast-forward; retry
	// as a person would, with pull --rebase.
	for i := 0; ; i++ {
		cmd := exec.Command("git", "push", "-q", "origin", "main")
		cmd.Dir = wt
		if out, err := cmd.CombinedOutput(); err == nil {
			break
		} else if i == 20 {
			t.Fatalf("push never succeeded: %s", out)
		}
		gitIn(t, wt, "pull", "-q", "--rebase")
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetByPath(ctx, "/pushed.md", false); err != nil {
		t.Errorf("the pushed memory is lost: %v", err)
	}
	page, err := s.List(ctx, ListOptions{PathPrefix: "/api/", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 30 {
		t.Errorf("%d of 30 API writes survived", len(page.Items))
	}
	fsck(t, s)
}

// TestDamagedCatalog: the catalog is derived state; a damaged one is rebuilt from history
// at open, with the same ids.
func TestDamagedCatalog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := d.CreateStore(ctx, CreateStoreInput{Name: "c", Actor: apiActor})
	res, err := s.Write(ctx, WriteInput{Path: "/a.md", Content: "a", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	before := historyOf(t, s)
	d.Close()
	if err := os.WriteFile(d.catalogPath(s.ID()), []byte("not a bbolt file, not at all, not even close"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err = Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s, err = d.Store(ctx, s.ID())
	if err != nil {
		t.Fatalf("open with a damaged catalog: %v", err)
	}
	if m, err := s.Get(ctx, res.Memory.ID, true); err != nil || *m.Content != "a" {
		t.Fatalf("memory after rebuild: %+v %v", m, err)
	}
	if after := historyOf(t, s); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("history changed by the rebuild:\n%v\n%v", after, before)
	}
}

// TestStoreRepoIsBareForGit: stock git takes a store's repository for bare, as one made by
// git init --bare, for a new store, an imported one, and (fixed when the store opens) a
// store whose config was written before gitmem wrote core.repositoryformatversion.
func TestStoreRepoIsBareForGit(t *testing.T) {
	ctx := context.Background()
	real := filepath.Join(t.TempDir(), "real.git")
	gitIn(t, ".", "init", "-q", "--bare", real)
	get := func(repoPath, key string) string { // "" if the config lacks key
		out, _ := exec.Command("git", "config", "--file", filepath.Join(repoPath, "config"), "--get", key).Output()
		return strings.TrimSpace(string(out))
	}
	check := func(what, repoPath string) {
		t.Helper()
		// From outside any repository, with the repository named only by --git-dir.
		cmd := exec.Command("git", "--git-dir", repoPath, "rev-parse", "--is-bare-repository")
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "true" {
			t.Errorf("%s: git rev-parse --is-bare-repository: %q %v", what, out, err)
		}
		for _, key := range []string{"core.repositoryformatversion", "core.filemode", "core.bare"} {
			if got, want := get(repoPath, key), get(real, key); got != want || want == "" {
				t.Errorf("%s: %s = %q, git init --bare writes %q", what, key, got, want)
			}
		}
		if got := get(repoPath, "gc.auto"); got != "0" {
			t.Errorf("%s: gc.auto = %q", what, got)
		}
	}

	dir := t.TempDir()
	d, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Close() }()
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "bare", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, "/a.md", "a\n", apiActor)
	check("a new store", s.RepoPath())

	// An import, as gitmem import does it: git fetches into the prepared repository.
	src := t.TempDir()
	d2, err := Open(ctx, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := d2.CreateStore(ctx, CreateStoreInput{Name: "source", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s2, "/b.md", "b\n", apiActor)
	tmp, err := d.PrepareImport()
	if err != nil {
		t.Fatal(err)
	}
	check("a repository prepared for an import", tmp)
	gitIn(t, tmp, "fetch", "-q", s2.RepoPath(), "+refs/heads/main:refs/heads/main")
	d2.Close()
	imported, err := d.ImportStore(ctx, tmp, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("an imported store", imported.RepoPath())

	// A store with the config that gitmem wrote before: fixed when it opens.
	id, repoPath := s.ID(), s.RepoPath()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	old := "[core]\n\tbare = true\n\tlogallrefupdates = false\n[gc]\n\tauto = 0\n[receive]\n\tautogc = false\n[user]\n\tname = kept\n"
	writeFile(t, filepath.Join(repoPath, "config"), old)
	if d, err = Open(ctx, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Store(ctx, id); err != nil {
		t.Fatal(err)
	}
	check("a store with the old config, opened again", repoPath)
	if got := get(repoPath, "user.name"); got != "kept" {
		t.Errorf("the fix dropped the rest of the config: user.name = %q", got)
	}
	fixed, _ := os.ReadFile(filepath.Join(repoPath, "config"))
	d, s = reopen(t, d, dir, id)
	if again, _ := os.ReadFile(filepath.Join(repoPath, "config")); string(again) != string(fixed) {
		t.Errorf("opened again, the config changed:\n%s\nfrom\n%s", again, fixed)
	}
	if m, err := s.GetByPath(ctx, "/a.md", true); err != nil || *m.Content != "a\n" {
		t.Errorf("/a.md after the fix: %+v %v", m, err)
	}
}

// A store whose store.json a push removed, and whose last memory is then deleted: the
// commit's tree is empty, and must be git's empty tree, not the zero hash (which git cannot
// read: a clone or fetch of main failed with "bad tree object 0000000...").
func TestDeleteLastFileWithoutStoreFile(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	mustWrite(t, s, "/a.md", "one\n", apiActor)
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	gitIn(t, wt, "rm", "-q", ".gitmem/store.json")
	gitIn(t, wt, "commit", "-qm", "no store.json")
	gitIn(t, wt, "push", "-q", "origin", "main")
	if _, err := s.DeletePath(ctx, DeletePathInput{Path: "/a.md", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	fsck(t, s)
	gitIn(t, wt, "pull", "-q")
	mustWrite(t, s, "/b.md", "two\n", apiActor)
	fsck(t, s)
}
