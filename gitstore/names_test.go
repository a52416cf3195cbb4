package gitstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStoreNamesAreUnique: a create or rename to a name that another store has (archived
// ones included) is refused with ErrNameTaken, also when creates race; a store is found by
// its name; a name two stores share (as history can bring) is refused with their ids.
func TestStoreNamesAreUnique(t *testing.T) {
	ctx := context.Background()
	d := newTestDataDir(t, Options{})
	a, err := d.CreateStore(ctx, CreateStoreInput{Name: "a", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Archive(ctx, apiActor); err != nil {
		t.Fatal(err)
	}
	_, err = d.CreateStore(ctx, CreateStoreInput{Name: "a", Actor: apiActor})
	// The refusal does not name the other store's id, which a key limited to one store would
	// learn by renaming its own.
	if !errors.Is(err, ErrNameTaken) || ErrorKind(err) != KindConflict || strings.Contains(err.Error(), a.ID()) {
		t.Fatalf("create of a taken name: %v", err)
	}
	b, err := d.CreateStore(ctx, CreateStoreInput{Name: "b", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.UpdateStore(ctx, b.ID(), StorePatch{Name: ptr("a"), Actor: apiActor}); !errors.Is(err, ErrNameTaken) {
		t.Fatalf("rename to a taken name: %v", err)
	}
	if info, err := d.UpdateStore(ctx, b.ID(), StorePatch{Name: ptr("b"), Description: ptr("same name"), Actor: apiActor}); err != nil || info.Name != "b" {
		t.Fatalf("update keeping its own name: %+v %v", info, err)
	}
	if id, err := d.ResolveStore(ctx, "b"); err != nil || id != b.ID() {
		t.Fatalf("resolve b: %s %v", id, err)
	}
	if _, err := d.ResolveStore(ctx, "nope"); !errors.Is(err, ErrNoStore) {
		t.Fatalf("resolve an unknown name: %v", err)
	}
	_, err = ResolveStoreRef([]StoreInfo{{ID: "memstore_1", Name: "x"}, {ID: "memstore_2", Name: "x"}}, "x")
	if ErrorKind(err) != KindConflict || !strings.Contains(err.Error(), "memstore_1, memstore_2") {
		t.Fatalf("a shared name: %v", err)
	}

	// Creates that race for one name: exactly one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, lost := 0, 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := d.CreateStore(ctx, CreateStoreInput{Name: "raced", Actor: apiActor})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, ErrNameTaken):
				lost++
			default:
				t.Error(fmt.Errorf("racing create: %w", err))
			}
		}()
	}
	wg.Wait()
	if won != 1 || lost != 7 {
		t.Errorf("racing creates of one name: %d won, %d lost", won, lost)
	}
}

// TestReserveName: a name that a push holds for its store is refused to every other way of
// taking a name (an API rename, a create, another store's push) with ErrNameTaken and
// without the holder's id; pushes to the holder itself may hold it too; it is free once every
// hold is released (twice counts once), or after ReleaseAfter's delay. Creates, renames and
// reservations that race for one name: exactly one wins.
func TestReserveName(t *testing.T) {
	ctx := context.Background()
	d := newTestDataDir(t, Options{})
	a := mustCreate(t, d, "a")
	b := mustCreate(t, d, "b")
	taken := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrNameTaken) || ErrorKind(err) != KindConflict || strings.Contains(err.Error(), a.ID()) {
			t.Errorf("%s: %v", what, err)
		}
	}
	h1, err := d.ReserveName(ctx, "x", a.ID())
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.UpdateStore(ctx, b.ID(), StorePatch{Name: ptr("x"), Actor: apiActor})
	taken("rename to a held name", err)
	_, err = d.CreateStore(ctx, CreateStoreInput{Name: "x", Actor: apiActor})
	taken("create of a held name", err)
	_, err = d.ReserveName(ctx, "x", b.ID())
	taken("another store's push to a held name", err)
	_, err = d.ReserveName(ctx, "b", a.ID())
	taken("a push to another store's name", err)
	h2, err := d.ReserveName(ctx, "x", a.ID())
	if err != nil {
		t.Fatalf("a second push to the holder: %v", err)
	}
	h1.Release()
	h1.Release()
	_, err = d.UpdateStore(ctx, b.ID(), StorePatch{Name: ptr("x"), Actor: apiActor})
	taken("rename while a second push holds the name", err)
	h2.Release()
	if _, err := d.UpdateStore(ctx, b.ID(), StorePatch{Name: ptr("x"), Actor: apiActor}); err != nil {
		t.Fatalf("rename once the holds are released: %v", err)
	}
	var none *NameHold
	none.Release()

	h3, err := d.ReserveName(ctx, "y", a.ID())
	if err != nil {
		t.Fatal(err)
	}
	h3.ReleaseAfter(50 * time.Millisecond)
	_, err = d.UpdateStore(ctx, b.ID(), StorePatch{Name: ptr("y"), Actor: apiActor})
	taken("rename before the delay", err)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, err := d.UpdateStore(ctx, b.ID(), StorePatch{Name: ptr("y"), Actor: apiActor})
		if err == nil {
			break
		}
		if !errors.Is(err, ErrNameTaken) || time.Now().After(deadline) {
			t.Fatalf("rename after the delay: %v", err)
		}
	}

	// Every way of taking a name at once, for one name: one store wins (its own push and
	// rename may both go through).
	c := mustCreate(t, d, "c")
	var wg sync.WaitGroup
	var mu sync.Mutex
	winners := map[string]bool{}
	try := func(who string, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			winners[who] = true
		case !errors.Is(err, ErrNameTaken):
			t.Errorf("racing for a name: %v", err)
		}
	}
	for _, id := range []string{a.ID(), c.ID()} {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := d.ReserveName(ctx, "z", id)
			try(id, err)
		}()
		go func() {
			defer wg.Done()
			_, err := d.UpdateStore(ctx, id, StorePatch{Name: ptr("z"), Actor: apiActor})
			try(id, err)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := d.CreateStore(ctx, CreateStoreInput{Name: "z", Actor: apiActor})
		try("a new store", err)
	}()
	wg.Wait()
	if len(winners) != 1 {
		t.Errorf("racing for one name, these won: %v", winners)
	}
}

// TestNamesSkipStoreGone: a store deleted between the listing of the stores' directory and
// its opening is left out of the list and of the name checks. Its not-found error would
// name its id to a key limited to another store, and fail a create or rename that does not
// concern it.
func TestNamesSkipStoreGone(t *testing.T) {
	ctx := context.Background()
	d := newTestDataDir(t, Options{})
	a, err := d.CreateStore(ctx, CreateStoreInput{Name: "a", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	// A name that the directory lists but that no longer opens, as after a deletion.
	gone := a.ID()[:len(a.ID())-1] + map[bool]string{true: "1", false: "0"}[strings.HasSuffix(a.ID(), "0")]
	if err := os.Symlink("missing", filepath.Join(d.Layout().StoresDir(), gone+".git")); err != nil {
		t.Fatal(err)
	}
	page, err := d.ListStores(ctx, StoreListOptions{IncludeArchived: true})
	if err != nil || len(page.Stores) != 1 || page.Stores[0].ID != a.ID() {
		t.Fatalf("list with a store gone: %+v %v", page, err)
	}
	if _, err := d.CreateStore(ctx, CreateStoreInput{Name: "b", Actor: apiActor}); err != nil {
		t.Fatalf("create with a store gone: %v", err)
	}
	if _, err := d.UpdateStore(ctx, a.ID(), StorePatch{Name: ptr("c"), Actor: apiActor}); err != nil {
		t.Fatalf("rename with a store gone: %v", err)
	}
}

// TestWriteKeepsAGivenMemoryID: a write that creates a memory gives it WriteInput.MemoryID
// if the store has never had that id, and a new id otherwise (a memory's, live or deleted,
// or no id at all).
func TestWriteKeepsAGivenMemoryID(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	wanted := NewID(MemoryPrefix, time.Now())
	for _, tc := range []struct {
		path, id string
		keep     bool
	}{
		{"/new.md", wanted, true},
		{"/again.md", wanted, false}, // /new.md has it
		{"/junk.md", "mem_not-an-id", false},
		{"/other.md", "memver_" + wanted[len(MemoryPrefix):], false},
	} {
		res, err := s.Write(ctx, WriteInput{Path: tc.path, Content: "x", Actor: apiActor, MemoryID: tc.id})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Memory.ID == tc.id; got != tc.keep || !validID(MemoryPrefix, res.Memory.ID) {
			t.Errorf("%s with id %q: created %s", tc.path, tc.id, res.Memory.ID)
		}
	}
	if _, err := s.Delete(ctx, DeleteInput{Path: "/new.md", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Write(ctx, WriteInput{Path: "/new.md", Content: "y", Actor: apiActor, MemoryID: wanted}); err != nil || res.Memory.ID == wanted {
		t.Errorf("a deleted memory's id: created %s (%v)", res.Memory.ID, err)
	}
}
