package gitstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// A trial write answers as the write would, and leaves the store as it was: main, the
// catalog, the versions.
func TestTrialWrites(t *testing.T) {
	ctx := context.Background()
	_, s := newPolicyStore(t, Options{}, Policy{MaxMemories: 2, ReviewPaths: []string{"/team/"}})
	if _, err := s.Write(ctx, WriteInput{Path: "/a.md", Content: "a", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	head := s.Head()
	versions := func() int {
		p, err := s.Versions(ctx, VersionFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Versions)
	}
	before := versions()

	try := func(name string, write func(ctx context.Context) error) (TrialResult, error) {
		t.Helper()
		var res TrialResult
		err := write(Trial(ctx, &res))
		if s.Head() != head {
			t.Fatalf("%s: main moved from %s to %s", name, head, s.Head())
		}
		if n := versions(); n != before {
			t.Fatalf("%s: %d versions, want %d", name, n, before)
		}
		return res, err
	}

	res, err := try("a new memory", func(ctx context.Context) error {
		r, err := s.Write(ctx, WriteInput{Path: "/b.md", Content: "b", Actor: apiActor})
		if err == nil && (r.Version == nil || r.Memory.Path != "/b.md") {
			t.Errorf("a new memory: result %+v, want the version it would make", r)
		}
		return err
	})
	if err != nil || !res.Changes {
		t.Fatalf("a new memory: %+v, %v; want it to change the store", res, err)
	}
	if _, err := s.GetByPath(ctx, "/b.md", false); !IsKind(err, KindNotFound) {
		t.Fatalf("the tried memory can be read: %v", err)
	}

	res, err = try("the same content", func(ctx context.Context) error {
		_, err := s.Write(ctx, WriteInput{Path: "/a.md", Content: "a", Actor: apiActor})
		return err
	})
	if err != nil || res.Changes {
		t.Fatalf("the same content: %+v, %v; want no change", res, err)
	}

	_, err = try("a create of a taken path", func(ctx context.Context) error {
		_, err := s.Write(ctx, WriteInput{Path: "/a.md", Content: "x", Actor: apiActor, Precondition: &Precondition{Type: NotExists}})
		return err
	})
	if !IsKind(err, KindPreconditionFailed) {
		t.Fatalf("a create of a taken path: %v, want a failed precondition", err)
	}

	_, err = try("a file below a file", func(ctx context.Context) error {
		_, err := s.Write(ctx, WriteInput{Path: "/a.md/b.md", Content: "x", Actor: apiActor})
		return err
	})
	if !IsKind(err, KindPathConflict) {
		t.Fatalf("a file below a file: %v, want a path conflict", err)
	}

	_, err = try("a delete of nothing", func(ctx context.Context) error {
		_, err := s.DeletePath(ctx, DeletePathInput{Path: "/nothing.md", Actor: apiActor})
		return err
	})
	if !IsKind(err, KindNotFound) {
		t.Fatalf("a delete of nothing: %v, want not found", err)
	}

	// A reviewed folder: refused to the store's own writes, tried as a proposal takes it.
	if _, err := s.Write(ctx, WriteInput{Path: "/team/x.md", Content: "x", Actor: apiActor}); ErrorRule(err) != RuleReview {
		t.Fatalf("a direct write to a reviewed folder: %v, want the review rule", err)
	}
	res, err = try("a reviewed folder", func(ctx context.Context) error {
		_, err := s.Write(ctx, WriteInput{Path: "/team/x.md", Content: "x", Actor: apiActor})
		return err
	})
	if err != nil || !res.Changes {
		t.Fatalf("a reviewed folder: %+v, %v; want it to pass as in a proposal", res, err)
	}

	// The quota: one memory more fits, two do not.
	res, err = try("a memory over the quota", func(ctx context.Context) error {
		_, err := s.MovePath(ctx, MovePathInput{From: "/a.md", To: "/c.md", Actor: apiActor})
		return err
	})
	if err != nil || !res.Changes {
		t.Fatalf("a rename: %+v, %v", res, err)
	}
	if _, err := s.Write(ctx, WriteInput{Path: "/b.md", Content: "b", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	head, before = s.Head(), versions()
	_, err = try("a memory over the quota", func(ctx context.Context) error {
		_, err := s.Write(ctx, WriteInput{Path: "/c.md", Content: "c", Actor: apiActor})
		return err
	})
	if ErrorRule(err) != RuleQuota {
		t.Fatalf("a memory over the quota: %v, want the quota rule", err)
	}
}

// Trial writes queued among real ones make nothing, and take nothing from the real ones'
// groups.
func TestTrialsAmongWrites(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 100 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := s.Write(ctx, WriteInput{Path: fmt.Sprintf("/real/%d.md", i), Content: "real", Actor: apiActor})
			errs <- err
		}()
		go func() {
			defer wg.Done()
			var res TrialResult
			_, err := s.Write(Trial(ctx, &res), WriteInput{Path: fmt.Sprintf("/tried/%d.md", i), Content: "tried", Actor: apiActor})
			if err == nil && !res.Changes {
				err = fmt.Errorf("trial %d: no change", i)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, prefix := range []string{"/real/", "/tried/"} {
		p, err := s.List(ctx, ListOptions{PathPrefix: prefix, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		want := 100
		if prefix == "/tried/" {
			want = 0
		}
		if len(p.Items) != want {
			t.Fatalf("%s holds %d memories, want %d", prefix, len(p.Items), want)
		}
	}
	// The trees that the trials built are not in main's history (git fsck finds main whole).
	fsck(t, s)
}
