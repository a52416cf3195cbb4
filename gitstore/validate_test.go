package gitstore

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestValidatePath(t *testing.T) {
	deep := strings.Repeat("/a", 21)
	long := "/" + strings.Repeat("x", MaxPathBytes)
	for _, tc := range []struct {
		path, rule string // rule: a word the error must contain; "" means valid
	}{
		{"/a.md", ""},
		{"/notes/2026/today.md", ""},
		{"/café/ü.md", ""},
		{strings.Repeat("/a", 20), ""},
		{"", "empty"},
		{"a.md", "must start with /"},
		{"/", "empty segment"},
		{"/a//b.md", "empty segment"},
		{"/a/", "empty segment"},
		{"/a/./b.md", `"." segment`},
		{"/a/../b.md", `".." segment`},
		{"/..", `".." segment`},
		{deep, "21 segments"},
		{long, "the limit is 1024 bytes"},
		{"/a\x00b", "control character"},
		{"/a\nb", "control character"},
		{"/a\u200bb", "format character"},
		{"/a\u2028b", "line or paragraph separator"},
		{"/a\u2029b", "line or paragraph separator"},
		{"/cafe\u0301.md", "NFC"},
		{"/\xff.md", "not valid UTF-8"},
		{"/.gitmem/store.json", "reserved"},
		{"/.gitmem", "reserved"},
		{"/x/.gitmem/y", ""}, // only the top-level folder is reserved
		{"/.git/config", "which git reserves"},
		{"/a/.GIT", "which git reserves"},
		{"/a/.git. /b", "which git reserves"},
		{"/GIT~1/b", "which git reserves"},
		{"/a/.gitmodules", "which git reserves"},
		{"/a/.github/x.md", ""},
		{"/a/.gitignore", ""},
	} {
		err := ValidatePath(tc.path)
		if tc.rule == "" {
			if err != nil {
				t.Errorf("ValidatePath(%q) = %v, want valid", tc.path, err)
			}
			continue
		}
		if !IsKind(err, KindInvalid) || !strings.Contains(err.Error(), tc.rule) {
			t.Errorf("ValidatePath(%q) = %v, want an invalid error naming %q", tc.path, err, tc.rule)
		}
	}
}

func TestValidateOther(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		rule string
	}{
		{"content too big", ValidateContent(strings.Repeat("x", MaxContentBytes+1)), "the limit is 102400 bytes"},
		{"content at the limit", ValidateContent(strings.Repeat("x", MaxContentBytes)), ""},
		{"empty content", ValidateContent(""), ""},
		{"content not UTF-8", ValidateContent("ok\xffno"), "offset 2"},
		{"prefix without slash", ValidatePathPrefix("/notes"), "must end with /"},
		{"prefix ok", ValidatePathPrefix("/notes/"), ""},
		{"root prefix", ValidatePathPrefix("/"), ""},
		{"bad prefix", ValidatePathPrefix("/a//"), "not a valid directory"},
		{"sha upper case", ValidateSHA256("content_sha256", strings.Repeat("A", 64)), "64 lowercase hex"},
		{"sha short", ValidateSHA256("content_sha256", "abc"), "64 lowercase hex"},
		{"sha not hex", ValidateSHA256("content_sha256", strings.Repeat("g", 64)), "64 lowercase hex"},
		{"store name empty", validateStoreName(""), "required"},
		{"store name long", validateStoreName(strings.Repeat("n", 256)), "the limit is 255"},
		{"store name control", validateStoreName("a\tb"), "control character"},
		{"description long", validateDescription(strings.Repeat("d", 1025)), "the limit is 1024"},
		{"metadata too many", validateMetadata(map[string]string{"1": "", "2": "", "3": "", "4": "", "5": "", "6": "", "7": "", "8": "", "9": "", "10": "", "11": "", "12": "", "13": "", "14": "", "15": "", "16": "", "17": ""}), "the limit is 16"},
		{"metadata empty key", validateMetadata(map[string]string{"": "v"}), "1 to 64"},
		{"metadata long value", validateMetadata(map[string]string{"k": strings.Repeat("v", 513)}), "the limit is 512"},
	} {
		if tc.rule == "" {
			if tc.err != nil {
				t.Errorf("%s: %v, want valid", tc.name, tc.err)
			}
			continue
		}
		if !IsKind(tc.err, KindInvalid) || !strings.Contains(tc.err.Error(), tc.rule) {
			t.Errorf("%s: %v, want an invalid error naming %q", tc.name, tc.err, tc.rule)
		}
	}
}

// TestRefusedWritesChangeNothing sends every kind of bad write and checks that none of
// them moved main.
func TestRefusedWritesChangeNothing(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	res, err := s.Write(ctx, WriteInput{Path: "/a/b.md", Content: "b", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Memory.ID
	head := s.Head()
	str := func(s string) *string { return &s }
	wrong := &Precondition{Type: ContentSHA256, ContentSHA256: sha256Hex("nope")}
	for _, tc := range []struct {
		name string
		kind Kind
		do   func() error
	}{
		{"bad path", KindInvalid, func() error {
			_, err := s.Write(ctx, WriteInput{Path: "/a/../x", Content: "x", Actor: apiActor})
			return err
		}},
		{"too big", KindInvalid, func() error {
			_, err := s.Write(ctx, WriteInput{Path: "/x.md", Content: strings.Repeat("x", MaxContentBytes+1), Actor: apiActor})
			return err
		}},
		{"no actor", KindInvalid, func() error {
			_, err := s.Write(ctx, WriteInput{Path: "/x.md", Content: "x"})
			return err
		}},
		{"unknown precondition", KindInvalid, func() error {
			_, err := s.Write(ctx, WriteInput{Path: "/x.md", Content: "x", Actor: apiActor, Precondition: &Precondition{Type: "exists"}})
			return err
		}},
		{"parent is a memory", KindPathConflict, func() error {
			_, err := s.Write(ctx, WriteInput{Path: "/a/b.md/c.md", Content: "x", Actor: apiActor})
			return err
		}},
		{"path is a directory", KindPathConflict, func() error {
			_, err := s.Write(ctx, WriteInput{Path: "/a", Content: "x", Actor: apiActor})
			return err
		}},
		{"not_exists on a taken path", KindPreconditionFailed, func() error {
			_, err := s.Write(ctx, WriteInput{Path: "/a/b.md", Content: "new", Actor: apiActor, Precondition: &Precondition{Type: NotExists}})
			return err
		}},
		{"wrong sha on write", KindPreconditionFailed, func() error {
			_, err := s.Write(ctx, WriteInput{Path: "/a/b.md", Content: "new", Actor: apiActor, Precondition: wrong})
			return err
		}},
		{"wrong sha on update", KindPreconditionFailed, func() error {
			_, err := s.UpdateMemory(ctx, UpdateInput{ID: id, Content: str("new"), Actor: apiActor, Precondition: wrong})
			return err
		}},
		{"not_exists on update", KindInvalid, func() error {
			_, err := s.UpdateMemory(ctx, UpdateInput{ID: id, Content: str("new"), Actor: apiActor, Precondition: &Precondition{Type: NotExists}})
			return err
		}},
		{"unknown id", KindNotFound, func() error {
			_, err := s.UpdateMemory(ctx, UpdateInput{ID: "mem_01NOPE", Content: str("new"), Actor: apiActor})
			return err
		}},
		{"rename into itself", KindPathConflict, func() error {
			if _, err := s.Write(ctx, WriteInput{Path: "/c.md", Content: "c", Actor: apiActor}); err != nil {
				return err
			}
			head = s.Head()
			_, err := s.UpdateMemory(ctx, UpdateInput{FromPath: "/c.md", Path: str("/a/b.md"), Actor: apiActor})
			return err
		}},
		{"wrong sha on delete", KindPreconditionFailed, func() error {
			_, err := s.Delete(ctx, DeleteInput{ID: id, ExpectedSHA256: sha256Hex("nope"), Actor: apiActor})
			return err
		}},
		{"delete unknown path", KindNotFound, func() error {
			_, err := s.Delete(ctx, DeleteInput{Path: "/nope.md", Actor: apiActor})
			return err
		}},
	} {
		err := tc.do()
		if got := ErrorKind(err); got != tc.kind {
			t.Errorf("%s: %v (kind %q), want kind %q", tc.name, err, got, tc.kind)
		}
		if s.Head() != head {
			t.Errorf("%s: a refused write moved main", tc.name)
		}
	}
	var pc *Error
	_, err = s.Write(ctx, WriteInput{Path: "/a/b.md/c.md", Content: "x", Actor: apiActor})
	if !asError(err, &pc) || pc.ConflictingMemoryID != id || pc.ConflictingPath != "/a/b.md" {
		t.Errorf("path conflict %+v does not name memory %s at /a/b.md", pc, id)
	}
}

func asError(err error, target **Error) bool {
	e, ok := err.(*Error)
	if ok {
		*target = e
	}
	return ok
}

// TestPreconditionSucceedsWhenAlreadyEqual: an update whose content_sha256 no longer
// matches succeeds anyway, without a commit, when the memory already is what was asked.
func TestPreconditionSucceedsWhenAlreadyEqual(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	res, _ := s.Write(ctx, WriteInput{Path: "/a.md", Content: "v2", Actor: apiActor})
	head := s.Head()
	v2 := "v2"
	got, err := s.UpdateMemory(ctx, UpdateInput{ID: res.Memory.ID, Content: &v2, Actor: apiActor,
		Precondition: &Precondition{Type: ContentSHA256, ContentSHA256: sha256Hex("v1")}})
	if err != nil || got.Version != nil || s.Head() != head {
		t.Errorf("update to the current state: %+v, %v; head moved: %v", got, err, s.Head() != head)
	}
}

func TestStoreLifecycle(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	d := newTestDataDir(t, Options{Clock: clock})
	var ids []string
	for _, name := range []string{"one", "two", "three"} {
		now = now.Add(time.Hour)
		s, err := d.CreateStore(ctx, CreateStoreInput{Name: name, Description: "about " + name,
			Metadata: map[string]string{"k": name}, Actor: apiActor})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID())
	}
	s, _ := d.Store(ctx, ids[0])
	info, err := s.Info(ctx)
	if err != nil || info.Name != "one" || info.Description != "about one" || info.Metadata["k"] != "one" || !info.CreatedAt.Equal(time.Date(2026, 1, 2, 4, 4, 5, 0, time.UTC)) {
		t.Fatalf("info: %+v, %v", info, err)
	}

	// Metadata is a patch: a value sets a key, nil deletes it, absent keys stay.
	now = now.Add(time.Hour)
	name, v := "uno", "1"
	info, err = s.UpdateInfo(ctx, StorePatch{Name: &name, Metadata: map[string]*string{"k": nil, "n": &v}, Actor: apiActor})
	if err != nil || info.Name != "uno" || info.Description != "about one" || len(info.Metadata) != 1 || info.Metadata["n"] != "1" || !info.UpdatedAt.Equal(now) {
		t.Fatalf("update: %+v, %v", info, err)
	}
	// Memory writes do not move the store's updated_at; an empty patch makes no commit.
	s.Write(ctx, WriteInput{Path: "/m.md", Content: "m", Actor: apiActor})
	head := s.Head()
	if info2, err := s.UpdateInfo(ctx, StorePatch{Name: &name, Actor: apiActor}); err != nil || !info2.UpdatedAt.Equal(info.UpdatedAt) || s.Head() != head {
		t.Errorf("no-op update: %+v, %v", info2, err)
	}

	// Archive: read-only, idempotent, hidden from the default listing.
	if _, err := s.Archive(ctx, apiActor); err != nil {
		t.Fatal(err)
	}
	if again, err := s.Archive(ctx, apiActor); err != nil || again.ArchivedAt == nil {
		t.Fatalf("archive twice: %+v, %v", again, err)
	}
	if _, err := s.Write(ctx, WriteInput{Path: "/x.md", Content: "x", Actor: apiActor}); !IsKind(err, KindArchived) {
		t.Errorf("write to an archived store: %v", err)
	}
	if _, err := s.UpdateInfo(ctx, StorePatch{Name: &name, Actor: apiActor}); !IsKind(err, KindArchived) {
		t.Errorf("update of an archived store: %v", err)
	}
	if m, err := s.GetByPath(ctx, "/m.md", true); err != nil || *m.Content != "m" {
		t.Errorf("read from an archived store: %v", err)
	}

	list := func(opts StoreListOptions) []string {
		t.Helper()
		var out []string
		for {
			page, err := d.ListStores(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range page.Stores {
				out = append(out, s.Name)
			}
			if page.NextCursor == "" {
				return out
			}
			opts.Cursor = page.NextCursor
		}
	}
	if got := strings.Join(list(StoreListOptions{Limit: 1}), ","); got != "three,two" {
		t.Errorf("stores: %s", got)
	}
	if got := strings.Join(list(StoreListOptions{IncludeArchived: true, Limit: 2}), ","); got != "three,two,uno" {
		t.Errorf("stores with archived: %s", got)
	}
	gte := time.Date(2026, 1, 2, 5, 4, 5, 0, time.UTC)
	if got := strings.Join(list(StoreListOptions{CreatedAtGTE: gte, CreatedAtLTE: gte}), ","); got != "two" {
		t.Errorf("stores created at %v: %s", gte, got)
	}

	if err := d.DeleteStore(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Store(ctx, ids[1]); !IsKind(err, KindNotFound) {
		t.Errorf("deleted store: %v", err)
	}
	if err := d.DeleteStore(ctx, ids[1]); !IsKind(err, KindNotFound) {
		t.Errorf("delete twice: %v", err)
	}
}

func TestVersionFilters(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := base
	d := newTestDataDir(t, Options{Clock: func() time.Time { return now }})
	s, _ := d.CreateStore(ctx, CreateStoreInput{Name: "v", Actor: apiActor})
	session := Actor{Type: SessionActor, ID: "sesn_01ABC", APIKeyID: "apikey_01SESSKEY"}
	other := Actor{Type: APIActor, ID: "apikey_01OTHER"}
	tick := func() { now = now.Add(time.Minute) }

	tick()
	a, _ := s.Write(ctx, WriteInput{Path: "/a.md", Content: "1", Actor: apiActor})
	tick()
	s.Write(ctx, WriteInput{Path: "/a.md", Content: "2", Actor: session})
	tick()
	b, _ := s.Write(ctx, WriteInput{Path: "/b.md", Content: "1", Actor: other})
	tick()
	s.Delete(ctx, DeleteInput{ID: a.Memory.ID, Actor: session})
	tick()
	s.Write(ctx, WriteInput{Path: "/b.md", Content: "2", Actor: apiActor})

	ops := func(f VersionFilter) string {
		t.Helper()
		var out []string
		for {
			page, err := s.Versions(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range page.Versions {
				out = append(out, string(v.Operation)+" "+v.Path)
			}
			if page.NextCursor == "" {
				return strings.Join(out, ", ")
			}
			f.Cursor = page.NextCursor
		}
	}
	for _, tc := range []struct {
		name string
		f    VersionFilter
		want string
	}{
		{"all", VersionFilter{Limit: 2}, "modified /b.md, deleted /a.md, created /b.md, modified /a.md, created /a.md"},
		{"deleted memory", VersionFilter{MemoryID: a.Memory.ID, Limit: 1}, "deleted /a.md, modified /a.md, created /a.md"},
		{"memory", VersionFilter{MemoryID: b.Memory.ID}, "modified /b.md, created /b.md"},
		{"operation", VersionFilter{Operation: OpCreated}, "created /b.md, created /a.md"},
		{"session", VersionFilter{SessionID: "sesn_01ABC"}, "deleted /a.md, modified /a.md"},
		{"key of a session", VersionFilter{APIKeyID: "apikey_01SESSKEY"}, "deleted /a.md, modified /a.md"},
		{"key", VersionFilter{APIKeyID: apiActor.ID}, "modified /b.md, created /a.md"},
		{"since", VersionFilter{CreatedAtGTE: base.Add(3 * time.Minute)}, "modified /b.md, deleted /a.md, created /b.md"},
		{"until", VersionFilter{CreatedAtLTE: base.Add(2 * time.Minute)}, "modified /a.md, created /a.md"},
		{"memory and operation", VersionFilter{MemoryID: a.Memory.ID, Operation: OpModified}, "modified /a.md"},
		{"unknown memory", VersionFilter{MemoryID: "mem_01NOPE"}, ""},
	} {
		if got := ops(tc.f); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	v, err := s.Versions(ctx, VersionFilter{SessionID: "sesn_01ABC", Limit: 1})
	if by := v.Versions[0].CreatedBy; err != nil || by.Type != session.Type || by.ID != session.ID || by.APIKeyID != session.APIKeyID {
		t.Errorf("session version by %+v, want %+v", v.Versions[0].CreatedBy, session)
	}
	if _, err := s.Versions(ctx, VersionFilter{Cursor: "page_bogus"}); !IsKind(err, KindInvalid) {
		t.Errorf("bogus cursor: %v", err)
	}
	got, err := s.Version(ctx, a.Version.ID, true)
	if err != nil || *got.Content != "1" || got.Operation != OpCreated || !got.CreatedAt.Equal(base.Add(time.Minute)) {
		t.Errorf("version: %+v, %v", got, err)
	}
}
