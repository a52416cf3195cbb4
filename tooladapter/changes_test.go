package tooladapter

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// stamps hides the times and the cursor of memory_changes' answers.
var (
	stamps  = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	cursorL = regexp.MustCompile(`(?m)^cursor: (evc_[A-Za-z0-9_-]+)$`)
)

// changesOf calls memory_changes and returns its answer with the times hidden, and its cursor.
func changesOf(t *testing.T, s *Session, in string) (string, string) {
	t.Helper()
	res := call(t, s, ChangesTool, []byte(in))
	if res.IsError {
		t.Fatalf("memory_changes %s: %s", in, res.Content)
	}
	m := cursorL.FindStringSubmatch(res.Content)
	if m == nil {
		t.Fatalf("memory_changes %s: no cursor in %q", in, res.Content)
	}
	return stamps.ReplaceAllString(cursorL.ReplaceAllString(res.Content, "cursor: C"), "T"), m[1]
}

// TestMemoryChanges: every change of the store, whoever made it, the session's own marked,
// then from a cursor only what came after it, a page at a time, or from a time.
func TestMemoryChanges(t *testing.T) {
	ctx := context.Background()
	s, st := newTestSession(t, nil)
	other := gitstore.Actor{Type: gitstore.SessionActor, ID: "sesn_other"}
	mustWrite := func(p, content string, a gitstore.Actor) {
		t.Helper()
		if _, err := st.Write(ctx, gitstore.WriteInput{Path: p, Content: content, Actor: a}); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite("/team/plan.md", "v1", other)
	if res := call(t, s, WriteTool, map[string]any{"path": "/memories/mine.md", "content": "x"}); res.IsError {
		t.Fatal(res.Content)
	}
	if _, err := st.Delete(ctx, gitstore.DeleteInput{Path: "/team/plan.md", Actor: other}); err != nil {
		t.Fatal(err)
	}
	got, cur := changesOf(t, s, `{}`)
	want := "Changes in your memory since the last 24 hours, oldest first:\n" +
		fmt.Sprintf("T the memory store %q (%s) at /memories/ was created by API key %s\n", "test", st.ID(), testActor.ID) +
		"T created /memories/team/plan.md by session sesn_other\n" +
		"T created /memories/mine.md by session " + s.ID() + " (you)\n" +
		"T deleted /memories/team/plan.md by session sesn_other\n" +
		next
	if got != want {
		t.Errorf("changes:\n%s\nwant:\n%s", got, want)
	}

	// From the cursor: nothing, then only what came after it, a page at a time.
	if got, again := changesOf(t, s, `{"since":"`+cur+`"}`); got != "No changes in your memory since the cursor.\n"+next || again != cur {
		t.Errorf("nothing new: %q %s, want the same cursor %s", got, again, cur)
	}
	mustWrite("/a.md", "a", other)
	mustWrite("/b.md", "b", other)
	mustWrite("/c.md", "c", other)
	got, cur = changesOf(t, s, `{"since":"`+cur+`","limit":2}`)
	if !strings.Contains(got, "T created /memories/a.md by session sesn_other\nT created /memories/b.md by session sesn_other\nMore changes follow") {
		t.Errorf("first page:\n%s", got)
	}
	got, _ = changesOf(t, s, `{"since":"`+cur+`","limit":2}`)
	if !strings.Contains(got, "since the cursor, oldest first:\nT created /memories/c.md by session sesn_other\nTo see") {
		t.Errorf("second page:\n%s", got)
	}

	// A time: nothing was made in the future; everything after an hour ago.
	if got, _ := changesOf(t, s, `{"since":"`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`"}`); !strings.HasPrefix(got, "No changes in your memory since T.") {
		t.Errorf("since the future: %q", got)
	}
	if got, _ := changesOf(t, s, `{"since":"1h"}`); strings.Count(got, "\nT ") != 7 {
		t.Errorf("since 1h, want 7 changes:\n%s", got)
	}
}

// next is the end of an answer that has read everything.
const next = "To see what changes next, call memory_changes with since set to this cursor.\ncursor: C"

// TestMemoryChangesWait: a call with wait_seconds answers with the change that comes while
// it waits, or with none when none comes.
func TestMemoryChangesWait(t *testing.T) {
	ctx := context.Background()
	s, st := newTestSession(t, nil)
	_, cur := changesOf(t, s, `{}`)
	done := make(chan string)
	go func() {
		res, err := s.Call(ctx, ChangesTool, []byte(`{"since":"`+cur+`","wait_seconds":30}`))
		if err != nil {
			res.Content = err.Error()
		}
		done <- res.Content
	}()
	time.Sleep(100 * time.Millisecond) // let the call start waiting; a write before is also found
	if _, err := st.Write(ctx, gitstore.WriteInput{Path: "/late.md", Content: "x", Actor: testActor}); err != nil {
		t.Fatal(err)
	}
	if got := <-done; !strings.Contains(got, "created /memories/late.md by API key") {
		t.Errorf("waited call: %q", got)
	}
	_, cur = changesOf(t, s, `{"since":"1h"}`)
	if got, _ := changesOf(t, s, `{"since":"`+cur+`","wait_seconds":1}`); got != "No changes in your memory since the cursor, also after waiting 1 seconds.\n"+next {
		t.Errorf("waited in vain: %q", got)
	}
	// A call whose context ends stops waiting.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.Call(cctx, ChangesTool, []byte(`{"since":"`+cur+`","wait_seconds":30}`)); err == nil {
		t.Error("a call whose context ended answered without an error")
	}
}

// TestMemoryChangesStores: with several stores, the changes of all of them in time order, with
// the paths as the session sees them, and one cursor for all.
func TestMemoryChangesStores(t *testing.T) {
	ctx := context.Background()
	d := newTestData(t)
	a, b := newTestStore(t, d, "Notes", nil), newTestStore(t, d, "Hand book", nil)
	s, err := NewSession(ctx, Options{Stores: []Attachment{{Store: a}, {Store: b, Access: ReadOnly}}})
	if err != nil {
		t.Fatal(err)
	}
	_, cur := changesOf(t, s, `{}`)
	for i, st := range []*gitstore.Store{b, a, b} {
		time.Sleep(2 * time.Millisecond) // distinct times, so that the order is the writes' order
		if _, err := st.Write(ctx, gitstore.WriteInput{Path: fmt.Sprintf("/%d.md", i), Content: "x", Actor: testActor}); err != nil {
			t.Fatal(err)
		}
	}
	got, next := changesOf(t, s, `{"since":"`+cur+`"}`)
	want := "Changes in your memory since the cursor, oldest first:\n" +
		"T created /memories/hand-book/0.md by API key " + testActor.ID + "\n" +
		"T created /memories/notes/1.md by API key " + testActor.ID + "\n" +
		"T created /memories/hand-book/2.md by API key " + testActor.ID + "\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("changes:\n%s\nwant:\n%s", got, want)
	}
	cursors, ok := gitstore.DecodeCursors(next)
	if !ok || len(cursors) != 2 || cursors[a.ID()] == "" || cursors[b.ID()] == "" {
		t.Errorf("cursor %s holds %v, want both stores", next, cursors)
	}
}

// TestMemoryChangesRefusals: bad input is an error that says what to pass, and changes nothing.
func TestMemoryChangesRefusals(t *testing.T) {
	s, st := newTestSession(t, nil)
	gone := gitstore.EncodeCursors(map[string]string{st.ID(): "memver_01NOTINTHEHISTORY000000000"})
	for in, want := range map[string]string{
		`{"limit":0}`:                 "Error: limit must be between 1 and 500, got 0",
		`{"limit":501}`:               "Error: limit must be between 1 and 500, got 501",
		`{"wait_seconds":31}`:         "Error: wait_seconds must be between 0 and 30, got 31",
		`{"wait_seconds":-1}`:         "Error: wait_seconds must be between 0 and 30, got -1",
		`{"since":3}`:                 `Error: Parameter "since" of memory_changes must be a string`,
		`{"since":"last tuesday"}`:    `Error: since "last tuesday" must be the cursor of an earlier memory_changes answer or an RFC 3339 time`,
		`{"since":"evc_!!"}`:          `Error: since "evc_!!" is not a cursor that memory_changes answered`,
		`{"since":"` + gone + `"}`:    `Error: The cursor's place in the memory store "test" (` + st.ID() + `) is no longer in its history`,
		`{"since":"1h","extra":true}`: `Error:`,
	} {
		res := call(t, s, ChangesTool, []byte(in))
		if !res.IsError || !strings.HasPrefix(res.Content, want) {
			t.Errorf("%s: %q, want an error starting %q", in, res.Content, want)
		}
	}
	// A session that looks back has nothing to follow.
	past, err := NewSession(context.Background(), Options{Stores: []Attachment{{Store: st}}, At: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	if res := call(t, past, ChangesTool, []byte(`{}`)); !res.IsError || !strings.Contains(res.Content, "nothing changes in it") {
		t.Errorf("session at a time: %q", res.Content)
	}
}

// TestMemoryChangesWaitersBounded: past maxWaiting calls that wait, a call answers at once
// and says why, so that waiting calls cannot hold all of a server's requests.
func TestMemoryChangesWaitersBounded(t *testing.T) {
	s, _ := newTestSession(t, nil)
	_, cur := changesOf(t, s, `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	for range maxWaiting {
		go func() {
			s.Call(ctx, ChangesTool, []byte(`{"since":"`+cur+`","wait_seconds":30}`))
			done <- struct{}{}
		}()
	}
	for len(waiting) < maxWaiting {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	got, _ := changesOf(t, s, `{"since":"`+cur+`","wait_seconds":30}`)
	if !strings.HasPrefix(got, "(Too many calls are waiting") || time.Since(start) > 10*time.Second {
		t.Errorf("the call past the bound: %q after %s", got, time.Since(start))
	}
	cancel()
	for range maxWaiting {
		<-done
	}
	if len(waiting) != 0 {
		t.Errorf("%d tokens left after the calls ended", len(waiting))
	}
}
