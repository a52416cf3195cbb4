package gitstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
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
