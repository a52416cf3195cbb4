package proposals

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/gitmem/gitmem/gitstore"
)

// TestStoresConcurrently: operations on the proposals of two stores at once (openings,
// writes, reads, lists, diffs, approvals, rejections, a redaction, a Forget, and a Close
// meeting them), for the race detector and for deadlocks between the stores' locks.
func TestStoresConcurrently(t *testing.T) {
	ctx := context.Background()
	m, a, b := twoStores(t)
	write(t, a, "/pw.md", "launch code: ZEBRA-PLUTO-4471\n", person)
	leaked := versionOf(t, a, "/pw.md", gitstore.OpCreated)
	write(t, a, "/pw.md", "in the vault\n", person)

	var wg sync.WaitGroup
	work := func(st *gitstore.Store, n int) {
		defer wg.Done()
		for i := range 6 {
			who := gitstore.Actor{Type: gitstore.SessionActor, ID: fmt.Sprintf("sesn_%d_%d", n, i), APIKeyID: fmt.Sprintf("apikey_%d", n)}
			f, p, err := m.WritesTried(ctx, st, who, "", "")
			if err != nil {
				continue
			}
			f.Write(ctx, gitstore.WriteInput{Path: fmt.Sprintf("/w/%d/%d.md", n, i), Content: "x\n", Actor: who})
			m.Reads(st, who)
			listAll(m, st.ID(), Filter{})
			m.Get(st.ID(), p.ID)
			m.Diff(ctx, st, p.ID)
			m.AddComment(st.ID(), p.ID, person, "hm")
			m.IsOpen(st.ID(), p.ID)
			m.Room(st.ID(), who)
			if i%2 == 0 {
				m.Approve(ctx, st, p.ID, person, ApproveOptions{AllowConflicts: true})
			} else {
				m.Reject(ctx, st, p.ID, person)
			}
		}
	}
	for n := range 3 {
		wg.Add(2)
		go work(a, n)
		go work(b, n)
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		a.Redact(ctx, gitstore.RedactInput{VersionID: leaked, Actor: person})
	}()
	go func() {
		defer wg.Done()
		m.Forget(b.ID())
	}()
	wg.Wait()

	// Close while operations go on.
	wg.Add(3)
	go func() { defer wg.Done(); m.Close() }()
	go func() { defer wg.Done(); listAll(m, a.ID(), Filter{}) }()
	go func() { defer wg.Done(); listAll(m, b.ID(), Filter{}) }()
	wg.Wait()
}
