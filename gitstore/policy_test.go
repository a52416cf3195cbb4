package gitstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitmem/gitmem/secrets"
	"github.com/gitmem/gitmem/secrets/secrettest"
)

// newPolicyStore creates a store with policy p in a fresh data directory.
func newPolicyStore(t *testing.T, opts Options, p Policy) (*DataDir, *Store) {
	t.Helper()
	d := newTestDataDir(t, opts)
	s, err := d.CreateStore(context.Background(), CreateStoreInput{Name: "hygiene", Policy: p, Actor: apiActor})
	if err != nil {
		t.Fatalf("create store: %v", err)
	}
	return d, s
}

// write is one way to write content to /notes.md that the secrets policy must see.
type write struct {
	name string
	do   func(s *Store, content string) (WriteResult, error)
}

// writes are the store's ways of putting new content at /notes.md, which holds "seed\n"
// before each: a create, a replace, an update, and edits computed in the writer.
var writes = []write{
	{"create", func(s *Store, c string) (WriteResult, error) {
		return s.Write(context.Background(), WriteInput{Path: "/new.md", Content: c, Actor: apiActor})
	}},
	{"replace", func(s *Store, c string) (WriteResult, error) {
		return s.Write(context.Background(), WriteInput{Path: "/notes.md", Content: c, Actor: apiActor})
	}},
	{"update", func(s *Store, c string) (WriteResult, error) {
		return s.UpdateMemory(context.Background(), UpdateInput{FromPath: "/notes.md", Content: &c, Actor: apiActor})
	}},
	{"edit", func(s *Store, c string) (WriteResult, error) {
		return s.UpdateMemory(context.Background(), UpdateInput{FromPath: "/notes.md", Actor: apiActor,
			Edit: func(cur string) (string, error) { return strings.Replace(cur, "seed\n", c, 1), nil }})
	}},
}

func TestSecretsPolicyOnEveryWrite(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []SecretsPolicy{"", SecretsReject, SecretsRedact, SecretsOff} {
		_, s := newPolicyStore(t, Options{}, Policy{Secrets: mode})
		for _, w := range writes {
			for _, sample := range secrettest.Samples() {
				t.Run(string(mode.Effective())+"/"+w.name+"/"+sample.Name, func(t *testing.T) {
					s.Delete(ctx, DeleteInput{Path: "/new.md", Actor: apiActor})
					if _, err := s.Write(ctx, WriteInput{Path: "/notes.md", Content: "seed\n", Actor: apiActor}); err != nil {
						t.Fatal(err)
					}
					head := s.Head()
					res, err := w.do(s, sample.Content)
					switch mode.Effective() {
					case SecretsReject:
						if !IsKind(err, KindInvalid) || !strings.Contains(err.Error(), sample.Kind) ||
							strings.Contains(err.Error(), sample.Secret) {
							t.Fatalf("err = %v, want invalid naming %s and not echoing the secret", err, sample.Kind)
						}
						if s.Head() != head {
							t.Fatalf("a rejected write made a commit")
						}
					case SecretsRedact:
						if err != nil {
							t.Fatal(err)
						}
						if len(res.Redacted) != 1 || res.Redacted[0].Kind != sample.Kind {
							t.Fatalf("Redacted = %v, want one %s", res.Redacted, sample.Kind)
						}
						m, err := s.Get(ctx, res.Memory.ID, true)
						if err != nil {
							t.Fatal(err)
						}
						if strings.Contains(*m.Content, sample.Secret) || !strings.Contains(*m.Content, secrets.Marker(sample.Kind)) {
							t.Fatalf("stored %q, want the secret replaced by its marker", *m.Content)
						}
						if *res.Memory.Content != *m.Content {
							t.Fatalf("result content %q, stored %q", *res.Memory.Content, *m.Content)
						}
					case SecretsOff:
						if err != nil || len(res.Redacted) != 0 {
							t.Fatalf("err = %v, redacted = %v; want the content stored as it is", err, res.Redacted)
						}
					}
				})
			}
		}
	}
}

func TestRejectedSecretNamesLineAndColumn(t *testing.T) {
	_, s := newPolicyStore(t, Options{}, Policy{})
	sample := secrettest.Samples()[0]
	_, err := s.Write(context.Background(), WriteInput{Path: "/deploy.md", Content: sample.Content, Actor: apiActor})
	want := "the content holds a secret (aws-access-token at line 2, column 9)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to say %q", err, want)
	}
}

func TestQuotasAtTheBoundary(t *testing.T) {
	ctx := context.Background()
	_, s := newPolicyStore(t, Options{}, Policy{MaxMemories: 2, MaxBytes: 10})
	put := func(path, content string) error {
		_, err := s.Write(ctx, WriteInput{Path: path, Content: content, Actor: apiActor})
		return err
	}
	if err := put("/a", "12345"); err != nil {
		t.Fatal(err)
	}
	if err := put("/b", "123456"); err == nil || !strings.Contains(err.Error(), "11 bytes, past its quota max_bytes of 10") {
		t.Fatalf("one byte over: err = %v, want the max_bytes quota", err)
	}
	if err := put("/b", "12345"); err != nil { // exactly at both limits
		t.Fatalf("exactly at the limits: %v", err)
	}
	if err := put("/c", ""); err == nil || !strings.Contains(err.Error(), "3 memories, past its quota max_memories of 2") {
		t.Fatalf("one memory over: err = %v, want the max_memories quota", err)
	}
	if err := put("/a", "123456"); err == nil || !IsKind(err, KindInvalid) {
		t.Fatalf("growing a memory past max_bytes: err = %v", err)
	}
	if err := put("/a", "1234"); err != nil { // shrinking always passes
		t.Fatal(err)
	}
	u, err := s.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u != (Usage{Memories: 2, Bytes: 9}) {
		t.Fatalf("usage = %+v, want 2 memories, 9 bytes", u)
	}
	// An edit computed in the writer is held to the quota too.
	_, err = s.UpdateMemory(ctx, UpdateInput{FromPath: "/a", Actor: apiActor, Edit: func(cur string) (string, error) { return cur + "xx", nil }})
	if err == nil || !strings.Contains(err.Error(), "max_bytes") {
		t.Fatalf("edit past max_bytes: err = %v", err)
	}
}

func TestQuotaHoldsUnderConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	_, s := newPolicyStore(t, Options{}, Policy{MaxMemories: 10})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Write(ctx, WriteInput{Path: "/m" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Content: "x", Actor: apiActor})
			if err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			} else if !IsKind(err, KindInvalid) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	u, _ := s.Usage(ctx)
	if ok != 10 || u.Memories != 10 {
		t.Fatalf("%d writes passed and the store holds %d memories; want 10 and 10", ok, u.Memories)
	}
}

func TestUsageSurvivesReindex(t *testing.T) {
	ctx := context.Background()
	d, s := newPolicyStore(t, Options{}, Policy{})
	for _, p := range []string{"/a", "/b", "/c"} {
		if _, err := s.Write(ctx, WriteInput{Path: p, Content: p + "!", Actor: apiActor}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Delete(ctx, DeleteInput{Path: "/b", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	if err := d.Reindex(ctx, s.ID(), nil); err != nil {
		t.Fatal(err)
	}
	s, _ = d.Store(ctx, s.ID())
	if u, _ := s.Usage(ctx); u != (Usage{Memories: 2, Bytes: 6}) {
		t.Fatalf("usage after reindex = %+v, want 2 memories, 6 bytes", u)
	}
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestExpiryDeletesUnusedMemoriesAndRestoreBringsThemBack(t *testing.T) {
	ctx := context.Background()
	clock := &stepClock{t: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}
	d, s := newPolicyStore(t, Options{Clock: clock.now}, Policy{ExpireAfter: Duration(30 * 24 * time.Hour)})
	for _, p := range []string{"/read.md", "/stale.md", "/written.md"} {
		if _, err := s.Write(ctx, WriteInput{Path: p, Content: "about " + p, Actor: apiActor}); err != nil {
			t.Fatal(err)
		}
	}
	clock.advance(20 * 24 * time.Hour)
	if _, err := s.GetByPath(ctx, "/read.md", true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, WriteInput{Path: "/written.md", Content: "changed", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	clock.advance(11 * 24 * time.Hour)

	dry, err := s.Expire(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Expired) != 1 || dry.Expired[0].Path != "/stale.md" || dry.Expired[0].VersionID != "" {
		t.Fatalf("dry run = %+v, want /stale.md only", dry.Expired)
	}
	if page, err := s.List(ctx, ListOptions{}); err != nil || len(page.Items) != 3 { // a listing is no read
		t.Fatalf("after a dry run: %d memories, %v; want 3", len(page.Items), err)
	}
	// Reads are kept in the catalog, whose rebuild keeps them.
	if err := d.Reindex(ctx, s.ID(), nil); err != nil {
		t.Fatal(err)
	}
	s, _ = d.Store(ctx, s.ID())
	rep, err := s.Expire(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Expired) != 1 || rep.Expired[0].Path != "/stale.md" || rep.Expired[0].VersionID == "" {
		t.Fatalf("expire = %+v, want /stale.md deleted", rep)
	}
	if _, err := s.GetByPath(ctx, "/stale.md", false); !IsKind(err, KindNotFound) {
		t.Fatalf("/stale.md after expiry: err = %v, want not found", err)
	}
	del, err := s.Version(ctx, rep.Expired[0].VersionID, false)
	if err != nil {
		t.Fatal(err)
	}
	if del.Operation != OpDeleted || del.CreatedBy.ID != SystemActor.ID || del.CreatedBy.Type != ServiceAccountActor {
		t.Fatalf("the expiry's version = %+v, want a delete by the system actor", del)
	}
	page, err := s.Versions(ctx, VersionFilter{MemoryID: rep.Expired[0].MemoryID})
	if err != nil {
		t.Fatal(err)
	}
	last := page.Versions[1] // newest first: the delete, then the create
	res, err := s.Restore(ctx, RestoreInput{VersionID: last.ID, MemoryID: last.MemoryID, Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := s.Get(ctx, res.Memory.ID, true); err != nil || *m.Content != "about /stale.md" {
		t.Fatalf("restored memory: %v, %v", m, err)
	}
	again, err := s.Expire(ctx, false)
	if err != nil || len(again.Expired) != 0 {
		t.Fatalf("expire right after the restore = %+v, %v; want nothing", again.Expired, err)
	}
}

func TestExpiryOffExpiresNothing(t *testing.T) {
	ctx := context.Background()
	clock := &stepClock{t: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}
	_, s := newPolicyStore(t, Options{Clock: clock.now}, Policy{})
	if _, err := s.Write(ctx, WriteInput{Path: "/old.md", Content: "x", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	clock.advance(10 * 365 * 24 * time.Hour)
	rep, err := s.Expire(ctx, false)
	if err != nil || len(rep.Expired) != 0 || rep.ExpireAfter != 0 {
		t.Fatalf("expire without a policy = %+v, %v", rep, err)
	}
}

func TestPolicyValidationAndPatch(t *testing.T) {
	ctx := context.Background()
	_, s := newPolicyStore(t, Options{}, Policy{})
	bad := []PolicyPatch{
		{Secrets: ptr(SecretsPolicy("warn"))},
		{ExpireAfter: ptr(Duration(time.Minute))},
		{MaxMemories: ptr(-1)},
		{MaxBytes: ptr(int64(-5))},
	}
	head := s.Head()
	for _, p := range bad {
		if _, err := s.UpdateInfo(ctx, StorePatch{Policy: &p, Actor: apiActor}); !IsKind(err, KindInvalid) {
			t.Errorf("patch %+v: err = %v, want invalid", p, err)
		}
	}
	if s.Head() != head {
		t.Fatal("a refused policy made a commit")
	}
	info, err := s.UpdateInfo(ctx, StorePatch{Policy: &PolicyPatch{Secrets: ptr(SecretsRedact), ExpireAfter: ptr(Duration(720 * time.Hour)), MaxBytes: ptr(int64(1 << 20))}, Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	want := Policy{Secrets: SecretsRedact, ExpireAfter: Duration(720 * time.Hour), MaxBytes: 1 << 20}
	if !info.Policy.Equal(want) {
		t.Fatalf("policy = %+v, want %+v", info.Policy, want)
	}
	if got, _ := s.Info(ctx); !got.Policy.Equal(want) {
		t.Fatalf("policy read back = %+v", got.Policy)
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "720h": 720 * time.Hour, "90m": 90 * time.Minute, "0": 0} {
		got, err := ParseDuration(in)
		if err != nil || time.Duration(got) != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "1.5d", "-3h", "soon"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) passed", in)
		}
	}
	if s := Duration(720 * time.Hour).String(); s != "30d" {
		t.Errorf("720h prints as %s", s)
	}
	var e *Error
	_, err := ParseDuration("soon")
	if !errors.As(err, &e) {
		t.Errorf("error %v is not a gitstore error", err)
	}
}

// TestReviewChange: while a policy reviews a folder, only a key that it exempts (or a session
// of one, or an actor without a key) changes its review; any actor changes the rest, and any
// sets up a review where there is none.
func TestReviewChange(t *testing.T) {
	reviewed := Policy{ReviewPaths: []string{"/team/"}, ReviewExempt: []string{"apikey_lead"}}
	lifted := Policy{ReviewExempt: []string{"apikey_lead"}}
	exempted := Policy{ReviewPaths: []string{"/team/"}, ReviewExempt: []string{"apikey_lead", "apikey_agent"}}
	quota := reviewed
	quota.MaxMemories = 10
	lead := Actor{Type: APIActor, ID: "apikey_lead"}
	leadSession := Actor{Type: SessionActor, ID: "sesn_1", APIKeyID: "apikey_lead"}
	agent := Actor{Type: APIActor, ID: "apikey_agent"}
	agentSession := Actor{Type: SessionActor, ID: "sesn_2", APIKeyID: "apikey_agent"}
	local := Actor{Type: UserActor, ID: "user_local"}
	for _, tc := range []struct {
		name     string
		from, to Policy
		actor    Actor
		refused  bool
	}{
		{"the agent lifts the review", reviewed, lifted, agent, true},
		{"the agent exempts itself", reviewed, exempted, agent, true},
		{"the agent's session lifts it", reviewed, lifted, agentSession, true},
		{"the agent sets a quota", reviewed, quota, agent, false},
		{"the lead lifts it", reviewed, lifted, lead, false},
		{"the lead's session exempts the agent", reviewed, exempted, leadSession, false},
		{"the data directory's user lifts it", reviewed, lifted, local, false},
		{"the agent sets up a review", lifted, reviewed, agent, false},
	} {
		err := tc.from.ReviewChange(tc.to, tc.actor)
		if refused := ErrorRule(err) == RuleReview; refused != tc.refused {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
