package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
)

// sseEvent is one server-sent event as a client reads it.
type sseEvent struct {
	id, name string
	data     map[string]any
}

// stream is an open event stream of the real server.
type stream struct {
	resp   *http.Response
	events chan sseEvent
	beats  chan struct{}
}

// openStream opens GET path with headers (name, value, ...) and reads its events in the
// background; the answer's status is checked by the caller.
func openStream(t *testing.T, url, key string, headers ...string) (*stream, int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	s := &stream{resp: resp, events: make(chan sseEvent, 1000), beats: make(chan struct{}, 100)}
	if resp.StatusCode != http.StatusOK {
		return s, resp.StatusCode
	}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					s.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ": heartbeat"):
				select {
				case s.beats <- struct{}{}:
				default:
				}
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data)
			}
		}
	}()
	return s, resp.StatusCode
}

// next returns the next n events, failing the test if they do not come within a while.
func (s *stream) next(t *testing.T, n int) []sseEvent {
	t.Helper()
	var out []sseEvent
	timeout := time.After(20 * time.Second)
	for len(out) < n {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("the stream ended after %d of %d events", len(out), n)
			}
			out = append(out, ev)
		case <-timeout:
			t.Fatalf("only %d of %d events came", len(out), n)
		}
	}
	return out
}

// none checks that no event comes for a moment.
func (s *stream) none(t *testing.T) {
	t.Helper()
	select {
	case ev := <-s.events:
		t.Fatalf("an event more than expected: %+v", ev)
	case <-time.After(300 * time.Millisecond):
	}
}

// versionIDs are the ids of a store's versions, oldest first, as the API lists them.
func versionIDs(t *testing.T, g *gitSrv, store string) []string {
	t.Helper()
	var ids []string
	page := ""
	for {
		var p struct {
			Data     []struct{ ID string } `json:"data"`
			NextPage *string               `json:"next_page"`
		}
		g.api(t, "GET", "/v1/memory_stores/"+store+"/memory_versions?limit=100"+page, "", "", &p)
		for _, v := range p.Data {
			ids = append([]string{v.ID}, ids...)
		}
		if p.NextPage == nil || *p.NextPage == "" {
			return ids
		}
		page = "&page=" + *p.NextPage
	}
}

// TestEventsEveryWayIn: the API, the memory tool, restore, revert, redact and a git push
// each make their versions' events, each exactly once, in commit order; the stream goes on
// live, and a reconnect with Last-Event-ID gets what came after and nothing twice.
func TestEventsEveryWayIn(t *testing.T) {
	g := startGitServerWith(t, GitOptions{})
	store := g.createStore(t, "", "events")
	url := g.url + "/v1/memory_stores/" + store + "/events"
	live, status := openStream(t, url, "")
	if status != 200 || live.resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", status, live.resp.Header.Get("Content-Type"))
	}
	if ev := live.next(t, 1)[0]; ev.name != "store.created" || ev.data["memory_store_id"] != store ||
		!strings.HasPrefix(ev.id, gitstore.StoreChangePrefix) || ev.data["store_change_id"] != ev.id {
		t.Fatalf("the store's first event: %+v", ev)
	}
	var created struct{ ID string }
	g.api(t, "POST", "/v1/memory_stores/"+store+"/memories", "", `{"path":"/a.md","content":"one"}`, &created)
	g.api(t, "POST", "/v1/memory_stores/"+store+"/memories/"+created.ID, "", `{"content":"two"}`, nil)
	ev := live.next(t, 2)
	if ev[0].name != "memory.created" || ev[1].name != "memory.modified" || ev[0].data["memory_id"] != created.ID ||
		ev[0].data["path"] != "/a.md" || ev[0].data["commit"] == "" || ev[0].data["content"] != nil {
		t.Fatalf("first events: %+v", ev)
	}
	// The memory tool, with a session: its events name the session.
	req, _ := http.NewRequest("POST", g.url+"/v1/memory_stores/"+store+"/tools/memory", strings.NewReader(`{"command":"create","path":"/memories/tool.md","file_text":"by the tool"}`))
	req.Header.Set("content-type", "application/json")
	req.Header.Set(SessionHeader, "sesn_tool")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("tool call: %v %v", resp, err)
	}
	if ev := live.next(t, 1)[0]; ev.data["session_id"] != "sesn_tool" || ev.data["path"] != "/tool.md" {
		t.Fatalf("tool event: %+v", ev)
	}
	// An agent tool over HTTP, and the same over MCP.
	g.api(t, "POST", "/v1/memory_stores/"+store+"/tools/memory_write", "", `{"path":"/memories/agent.md","content":"by an agent tool"}`, nil)
	if ev := live.next(t, 1)[0]; ev.name != "memory.created" || ev.data["path"] != "/agent.md" {
		t.Fatalf("agent tool event: %+v", ev)
	}
	ctx := context.Background()
	cs, err := mcpConnect(t, ctx, g.url+"/mcp?store="+store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := mcpCall(t, ctx, cs, "memory_write", map[string]any{"path": "/memories/mcp.md", "content": "over MCP"}); isErr {
		t.Fatalf("MCP write: %s", text)
	}
	if ev := live.next(t, 1)[0]; ev.name != "memory.created" || ev.data["path"] != "/mcp.md" {
		t.Fatalf("MCP event: %+v", ev)
	}
	// A push of a commit made with git.
	work := t.TempDir()
	gitOK(t, work, "clone", "-q", g.repoURL("", store), "w")
	wt := filepath.Join(work, "w")
	put(t, filepath.Join(wt, "pushed.md"), "from git\n")
	gitOK(t, wt, "add", "-A")
	gitOK(t, wt, "commit", "-qm", "from git")
	gitOK(t, wt, "push", "-q")
	if ev := live.next(t, 1)[0]; ev.name != "memory.created" || ev.data["path"] != "/pushed.md" {
		t.Fatalf("push event: %+v", ev)
	}
	// Restore, revert and a delete.
	vs := versionIDs(t, g, store)
	g.api(t, "POST", "/v1/memory_stores/"+store+"/memory_versions/"+vs[0]+"/restore", "", `{}`, nil)
	g.api(t, "POST", "/v1/memory_stores/"+store+"/revert", "", `{"session_id":"sesn_tool"}`, nil)
	g.api(t, "DELETE", "/v1/memory_stores/"+store+"/memories/"+created.ID, "", "", nil)
	rest := live.next(t, 3)
	if rest[0].name != "memory.modified" || rest[1].name != "memory.deleted" || rest[1].data["path"] != "/tool.md" || rest[2].name != "memory.deleted" {
		t.Fatalf("restore, revert, delete: %+v", rest)
	}
	live.none(t)

	// Every version once, in commit order: the events' ids are the versions' ids.
	all := versionIDs(t, g, store)
	replay, _ := openStream(t, url, "")
	got := replay.next(t, len(all)+1)[1:] // after store.created
	for i, e := range got {
		if e.id != all[i] || e.data["memory_version_id"] != all[i] {
			t.Fatalf("event %d is %s, version %d is %s", i, e.id, i, all[i])
		}
	}
	replay.none(t)

	// A redaction: the version's event is memory.redacted from then on, with no path.
	g.api(t, "POST", "/v1/memory_stores/"+store+"/memory_versions/"+all[0]+"/redact", "", `{}`, nil)
	redacted, _ := openStream(t, url, "")
	if e := redacted.next(t, 2)[1]; e.name != "memory.redacted" || e.data["path"] != nil {
		t.Fatalf("a redacted version's event: %+v", e)
	}

	// Resume after the third event: the rest, nothing twice; also with ?after=.
	resumed, _ := openStream(t, url, "", "Last-Event-ID", all[2])
	if e := resumed.next(t, len(all)-3); e[0].id != all[3] || e[len(e)-1].id != all[len(all)-1] {
		t.Fatalf("resumed from %s: %s..%s", all[2], e[0].id, e[len(e)-1].id)
	}
	resumed.none(t)
	after, _ := openStream(t, url+"?after="+all[len(all)-2], "")
	if e := after.next(t, 1)[0]; e.id != all[len(all)-1] {
		t.Fatalf("?after=: %s", e.id)
	}
	after.none(t)
	// From a time: the versions made at or after it.
	future, _ := openStream(t, url+"?after=2h", "") // 2h ago: every event
	future.next(t, len(all)+1)
	// After gc the cursors still resolve.
	if st := g.api(t, "POST", "/v1/memory_stores/"+store+"/gc", "", `{}`, nil); st != 200 {
		t.Fatalf("gc: %d", st)
	}
	again, _ := openStream(t, url, "", "Last-Event-ID", all[len(all)-2])
	if e := again.next(t, 1)[0]; e.id != all[len(all)-1] {
		t.Fatalf("after gc: %s", e.id)
	}
	// Changes of the store itself: an update, then archiving; a stream resumes after them.
	g.api(t, "POST", "/v1/memory_stores/"+store, "", `{"description":"watched"}`, nil)
	if e := again.next(t, 1)[0]; e.name != "store.updated" || e.data["operation"] != "updated" || e.data["commit"] == "" {
		t.Fatalf("store update event: %+v", e)
	} else {
		g.api(t, "POST", "/v1/memory_stores/"+store+"/archive", "", `{}`, nil)
		if e2 := again.next(t, 1)[0]; e2.name != "store.archived" {
			t.Fatalf("archive event: %+v", e2)
		}
		fromUpdate, _ := openStream(t, url, "", "Last-Event-ID", e.id)
		if e3 := fromUpdate.next(t, 1)[0]; e3.name != "store.archived" {
			t.Fatalf("resumed after a store event: %+v", e3)
		}
		fromUpdate.none(t)
	}
	// A cursor that is not in the history gets an error event that says where to restart.
	gone, _ := openStream(t, url, "", "Last-Event-ID", "memver_01M83RXJE06891D7CSNGD1TFB7")
	if e := gone.next(t, 1)[0]; e.name != "error" || !strings.Contains(fmt.Sprint(e.data["message"]), "?after=") {
		t.Fatalf("an unknown cursor: %+v", e)
	}
}

// TestEventsRefusals: the key, its store and the inputs are checked as on every route.
func TestEventsRefusals(t *testing.T) {
	g := startGitServerWith(t, GitOptions{})
	mine := g.createStore(t, "", "mine")
	theirs := g.createStore(t, "", "theirs")
	_, secret, err := g.keys.Create("limited", apikeys.ReadOnly, mine)
	if err != nil {
		t.Fatal(err)
	}
	base := g.url + "/v1/memory_stores/"
	for _, tc := range []struct {
		url, key string
		headers  []string
		status   int
	}{
		{base + mine + "/events", "", nil, http.StatusUnauthorized},
		{base + mine + "/events", "gitmem_wrong", nil, http.StatusUnauthorized},
		{base + theirs + "/events", secret, nil, http.StatusForbidden},
		{base + mine + "/events?since=1h", secret, nil, http.StatusBadRequest},
		{base + mine + "/events?after=someday", secret, nil, http.StatusBadRequest},
		{base + mine + "/events", secret, []string{"Last-Event-ID", "not-a-cursor"}, http.StatusBadRequest},
		{base + "memstore_01M83RXJE06891D7CSNGD1TFB7/events", secret, nil, http.StatusForbidden},
		{base + mine + "/events", secret, nil, http.StatusOK}, // a read-only key may read events
	} {
		if _, status := openStream(t, tc.url, tc.key, tc.headers...); status != tc.status {
			t.Errorf("GET %s (key %q, %v): %d, want %d", tc.url, tc.key, tc.headers, status, tc.status)
		}
	}
}

// TestEventsHeartbeatAndShutdown: an idle stream gets heartbeats, and a server that shuts
// down ends its streams instead of waiting for them.
func TestEventsHeartbeatAndShutdown(t *testing.T) {
	old := HeartbeatEvery
	HeartbeatEvery = 50 * time.Millisecond
	t.Cleanup(func() { HeartbeatEvery = old })
	dir := t.TempDir()
	d, err := gitstore.Open(context.Background(), dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	keys, _ := apikeys.Open(dir)
	srv := New(d, keys, Options{})
	st, err := d.CreateStore(context.Background(), gitstore.CreateStoreInput{Name: "idle", Actor: LocalUser})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeListener(ctx, ln) }()
	s, status := openStream(t, "http://"+ln.Addr().String()+"/v1/memory_stores/"+st.ID()+"/events", "")
	if status != 200 {
		t.Fatalf("events: %d", status)
	}
	s.next(t, 1) // store.created
	select {
	case <-s.beats:
	case <-time.After(5 * time.Second):
		t.Fatal("no heartbeat on an idle stream")
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the server waited for its open stream to shut down")
	}
	if _, ok := <-s.events; ok {
		t.Fatal("the stream did not end")
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("shutdown took %s", time.Since(start))
	}
}

// TestEventsAcrossRestart: a cursor from before a restart of the server (a new process over
// the same data directory) resumes where it was, as it is resolved against the history.
func TestEventsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	serve := func() (*gitstore.DataDir, string, func()) {
		d, keys := openDir(t, dir)
		url, stop := serveListener(t, New(d, keys, Options{}))
		return d, url, func() { stop(); d.Close() }
	}
	d, url, stop := serve()
	st, err := d.CreateStore(context.Background(), gitstore.CreateStoreInput{Name: "durable", Actor: LocalUser})
	if err != nil {
		t.Fatal(err)
	}
	write := func(d *gitstore.DataDir, p string) {
		s, err := d.Store(context.Background(), st.ID())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(context.Background(), gitstore.WriteInput{Path: p, Content: p, Actor: LocalUser}); err != nil {
			t.Fatal(err)
		}
	}
	write(d, "/one.md")
	write(d, "/two.md")
	first, _ := openStream(t, url+"/v1/memory_stores/"+st.ID()+"/events", "")
	seen := first.next(t, 3)
	stop()

	d, url, stop = serve()
	defer stop()
	write(d, "/three.md")
	resumed, _ := openStream(t, url+"/v1/memory_stores/"+st.ID()+"/events", "", "Last-Event-ID", seen[2].id)
	if e := resumed.next(t, 1)[0]; e.data["path"] != "/three.md" {
		t.Fatalf("after a restart: %+v", e)
	}
	resumed.none(t)
}

// TestAllEvents: GET /v1/events streams every store's events, also of a store made while it
// runs; its ids resume every store at once; a key limited to a store sees that store's only.
func TestAllEvents(t *testing.T) {
	g := startGitServerWith(t, GitOptions{})
	a := g.createStore(t, "", "a")
	all, status := openStream(t, g.url+"/v1/events", "")
	if status != 200 {
		b, _ := io.ReadAll(all.resp.Body)
		t.Fatalf("/v1/events: %d %s", status, b)
	}
	if e := all.next(t, 1)[0]; e.name != "store.created" || e.data["memory_store_id"] != a || !strings.HasPrefix(e.id, "evc_") {
		t.Fatalf("first event: %+v", e)
	}
	b := g.createStore(t, "", "b")
	if e := all.next(t, 1)[0]; e.name != "store.created" || e.data["memory_store_id"] != b {
		t.Fatalf("a store made while the stream runs: %+v", e)
	}
	g.api(t, "POST", "/v1/memory_stores/"+a+"/memories", "", `{"path":"/a1.md","content":"1"}`, nil)
	g.api(t, "POST", "/v1/memory_stores/"+b+"/memories", "", `{"path":"/b1.md","content":"1"}`, nil)
	g.api(t, "POST", "/v1/memory_stores/"+a+"/memories", "", `{"path":"/a2.md","content":"2"}`, nil)
	got := all.next(t, 3)
	paths := map[string]bool{}
	for _, e := range got {
		paths[fmt.Sprint(e.data["path"])] = true
	}
	if !paths["/a1.md"] || !paths["/b1.md"] || !paths["/a2.md"] {
		t.Fatalf("writes to two stores: %+v", got)
	}
	all.none(t)
	// Resume from the first write's event: the two others, nothing twice.
	resumed, _ := openStream(t, g.url+"/v1/events", "", "Last-Event-ID", got[0].id)
	rest := resumed.next(t, 2)
	if rest[0].data["path"] != got[1].data["path"] || rest[1].data["path"] != got[2].data["path"] {
		t.Fatalf("resumed: %+v", rest)
	}
	resumed.none(t)
	// From a time: every event of both stores.
	since, _ := openStream(t, g.url+"/v1/events?after=1h", "")
	since.next(t, 5)
	since.none(t)
	for _, tc := range []struct {
		url     string
		headers []string
	}{
		{"/v1/events", []string{"Last-Event-ID", "memver_01M83RXJE06891D7CSNGD1TFB7"}},
		{"/v1/events", []string{"Last-Event-ID", "evc_!!"}},
		{"/v1/events", []string{"Last-Event-ID", "evc_" + "eyJ4IjoieSJ9"}}, // {"x":"y"}
		{"/v1/events?after=someday", nil},
		{"/v1/events?store=a", nil},
	} {
		if _, status := openStream(t, g.url+tc.url, "", tc.headers...); status != http.StatusBadRequest {
			t.Errorf("GET %s %v: %d, want 400", tc.url, tc.headers, status)
		}
	}

	// A key limited to b: b's events only; a reader with no key is refused.
	_, secret, err := g.keys.Create("limited", apikeys.ReadOnly, b)
	if err != nil {
		t.Fatal(err)
	}
	limited, status := openStream(t, g.url+"/v1/events", secret)
	if status != 200 {
		t.Fatalf("limited key: %d", status)
	}
	for _, e := range limited.next(t, 2) {
		if e.data["memory_store_id"] != b {
			t.Fatalf("a limited key saw another store's event: %+v", e)
		}
	}
	limited.none(t)
	if _, status := openStream(t, g.url+"/v1/events", ""); status != http.StatusUnauthorized {
		t.Fatalf("no key: %d", status)
	}
}
