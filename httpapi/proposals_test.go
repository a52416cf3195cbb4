package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/proposals"
)

// TestProposals: an agent with a propose key writes through the official SDK and the tools;
// main does not change; the agent reads its own writes; a person reviews the proposal over
// the API, and approval makes the agent's versions main's. What a propose key may not do is
// refused.
func TestProposals(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("person", apikeys.ReadWrite, "")
	agentKey, pk, _ := ts.keys.Create("agent", apikeys.Propose, "")
	person := ts.client(option.WithAPIKey(rw))
	agent := ts.client(option.WithAPIKey(pk))
	store, err := person.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "team"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := person.Beta.MemoryStores.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/team/rules.md", Content: anthropic.String("Review every change.\n")}); err != nil {
		t.Fatal(err)
	}

	// The agent writes as any client does.
	made, err := agent.Beta.MemoryStores.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/team/idea.md", Content: anthropic.String("Ship on Fridays.\n")})
	if err != nil {
		t.Fatal(err)
	}
	if status, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores/"+store.ID+"/tools/memory_edit", `{"path":"/memories/team/rules.md","old_string":"every","new_string":"each"}`,
		map[string]string{"x-api-key": pk, "content-type": "application/json"}); status != 200 || !strings.Contains(body, `"is_error":false`) {
		t.Fatalf("the agent's tool call: %d %s", status, body)
	}
	// It reads its own writes; others read main.
	if got, err := agent.Beta.MemoryStores.Memories.Get(ctx, made.ID, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: store.ID}); err != nil || got.Content != "Ship on Fridays.\n" {
		t.Errorf("the agent reads its write: %+v %v", got, err)
	}
	page, err := person.Beta.MemoryStores.Memories.List(ctx, store.ID, anthropic.BetaMemoryStoreMemoryListParams{})
	if err != nil || len(page.Data) != 1 {
		t.Errorf("main holds %d memories before approval, %v", len(page.Data), err)
	}

	// What a propose key may not do.
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/memory_stores/" + store.ID, `{"name":"renamed"}`},
		{"POST", "/v1/memory_stores/" + store.ID + "/archive", ``},
		{"POST", "/v1/memory_stores", `{"name":"new"}`},
	} {
		if status, body := rawRequest(t, tc.method, ts.url+tc.path, tc.body, map[string]string{"x-api-key": pk, "content-type": "application/json"}); status != 403 || !strings.Contains(body, "may only propose") {
			t.Errorf("%s %s with a propose key: %d %s", tc.method, tc.path, status, body)
		}
	}

	// A person reviews.
	hdr := map[string]string{"x-api-key": rw, "content-type": "application/json"}
	p := onlyOpenProposal(t, ts.url+"/v1/memory_stores/"+store.ID, rw)
	if p.Author["api_key_id"] != agentKey.ID {
		t.Fatalf("the open proposal's author: %v, want the agent's key %s", p.Author, agentKey.ID)
	}
	id := p.ID
	status, body := rawRequest(t, "GET", ts.url+"/v1/memory_stores/"+store.ID+"/proposals/"+id, "", hdr)
	if status != 200 || !strings.Contains(body, `"operation":"created"`) || !strings.Contains(body, `"operation":"modified"`) || !strings.Contains(body, `+Review each change.`) {
		t.Errorf("get with its changes: %d %s", status, body)
	}
	if status, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores/"+store.ID+"/proposals/"+id+"/approve", `{}`, map[string]string{"x-api-key": pk, "content-type": "application/json"}); status != 403 {
		t.Errorf("the proposer approves its own proposal: %d %s", status, body)
	}
	if status, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores/"+store.ID+"/proposals/"+id+"/comments", `{"body":"Fridays?"}`, hdr); status != 201 || !strings.Contains(body, "Fridays?") {
		t.Errorf("comment: %d %s", status, body)
	}
	if status, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores/"+store.ID+"/proposals/"+id+"/approve", `{"allow_conflicts":"yes"}`, hdr); status != 400 {
		t.Errorf("a bad allow_conflicts: %d %s", status, body)
	}
	status, body = rawRequest(t, "POST", ts.url+"/v1/memory_stores/"+store.ID+"/proposals/"+id+"/approve", `{}`, hdr)
	if status != 200 || !strings.Contains(body, `"state":"approved"`) {
		t.Fatalf("approve: %d %s", status, body)
	}
	got, err := person.Beta.MemoryStores.Memories.Get(ctx, made.ID, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: store.ID})
	if err != nil || got.Content != "Ship on Fridays.\n" {
		t.Errorf("after approval main has %+v, %v", got, err)
	}
	vers, err := person.Beta.MemoryStores.MemoryVersions.List(ctx, store.ID, anthropic.BetaMemoryStoreMemoryVersionListParams{APIKeyID: anthropic.String(agentKey.ID)})
	if err != nil || len(vers.Data) != 2 {
		t.Errorf("versions by the agent's key in main: %d, %v", len(vers.Data), err)
	}

	// The review's steps are events of the store's feed, in order with the versions that the
	// approval brought, the same after the catalog is rebuilt from history.
	feed := func() string {
		t.Helper()
		st, err := ts.data.Store(ctx, store.ID)
		if err != nil {
			t.Fatal(err)
		}
		evs, _, err := st.EventsAfter(ctx, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ev := range evs {
			typ, data, err := EventPayload(ev)
			if err != nil {
				t.Fatal(err)
			}
			line := typ + " " + ev.ID()
			if strings.HasPrefix(typ, "proposal.") && !strings.Contains(string(data), `"proposal_id":"`+id+`"`) {
				t.Errorf("event %s: %s", typ, data)
			}
			out = append(out, line)
		}
		return strings.Join(out, "\n")
	}
	before := feed()
	types := regexp.MustCompile(` \S+`).ReplaceAllString(before, "")
	if types != "store.created\nmemory.created\nproposal.opened\nmemory.created\nmemory.modified\nproposal.approved" {
		t.Errorf("the feed:\n%s", types)
	}
	if err := ts.data.Reindex(ctx, store.ID, nil); err != nil {
		t.Fatal(err)
	}
	if after := feed(); after != before {
		t.Errorf("after a rebuild the feed is\n%s\nwas\n%s", after, before)
	}
}

// TestProposeOverMCP: a store attached with :propose over /mcp makes the session's writes a
// proposal by that session, even with a read_write key; the instructions say so.
func TestProposeOverMCP(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("person", apikeys.ReadWrite, "")
	person := ts.client(option.WithAPIKey(rw))
	store, err := person.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "team"})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcpConnect(t, ctx, ts.url+"/mcp?store=team:propose", map[string]string{"x-api-key": rw, SessionHeader: "sesn_drafter"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cs.InitializeResult().Instructions, "your changes are proposed") {
		t.Errorf("instructions: %s", cs.InitializeResult().Instructions)
	}
	if text, isErr := mcpCall(t, ctx, cs, "memory_write", map[string]any{"path": "/memories/draft.md", "content": "a draft\n"}); isErr {
		t.Fatal(text)
	}
	if text, _ := mcpCall(t, ctx, cs, "memory_read", map[string]any{"path": "/memories/draft.md"}); !strings.Contains(text, "a draft") {
		t.Errorf("the session reads its draft: %s", text)
	}
	page, err := person.Beta.MemoryStores.Memories.List(ctx, store.ID, anthropic.BetaMemoryStoreMemoryListParams{})
	if err != nil || len(page.Data) != 0 {
		t.Errorf("main holds %d memories, %v; want none before approval", len(page.Data), err)
	}
	status, body := rawRequest(t, "GET", ts.url+"/v1/memory_stores/"+store.ID+"/proposals", "", map[string]string{"x-api-key": rw})
	if status != 200 || !strings.Contains(body, `"session_id":"sesn_drafter"`) || !strings.Contains(body, `Changes by session sesn_drafter (key \"person\")`) {
		t.Errorf("proposals: %d %s", status, body)
	}
}

// TestProposalsOfOthers: a session id is the client's to choose: another key that sends the
// same one neither reads nor joins the proposal; a propose key sees its own proposals only.
func TestProposalsOfOthers(t *testing.T) {
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("person", apikeys.ReadWrite, "")
	_, a, _ := ts.keys.Create("agent-a", apikeys.Propose, "")
	_, b, _ := ts.keys.Create("agent-b", apikeys.Propose, "")
	hdr := func(key string) map[string]string {
		return map[string]string{"x-api-key": key, "content-type": "application/json", SessionHeader: "sesn_shared"}
	}
	status, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"team"}`, map[string]string{"x-api-key": rw, "content-type": "application/json"})
	var store struct{ ID string }
	if json.Unmarshal([]byte(body), &store); status != 200 {
		t.Fatalf("store: %d %s", status, body)
	}
	base := ts.url + "/v1/memory_stores/" + store.ID
	theirs := propose(t, base, a, "sesn_shared", "/draft-a.md")
	if _, body := rawRequest(t, "GET", base+"/memories?view=full", "", hdr(b)); strings.Contains(body, "draft-a") {
		t.Errorf("b reads a's proposal with a's session id: %s", body)
	}
	mine := propose(t, base, b, "sesn_shared", "/b.md")
	if theirs == mine {
		t.Fatal("a and b share a proposal")
	}
	if open := openProposals(t, base, rw); len(open) != 2 {
		t.Fatalf("two keys with one session id made %d proposals: %+v", len(open), open)
	}
	for key, id := range map[string]string{a: theirs, b: mine} {
		if p := onlyOpenProposal(t, base, key); p.ID != id || p.Author["api_key_id"] == "" {
			t.Fatalf("a propose key lists %+v; want its own only, %s", p, id)
		}
	}
	props := base + "/proposals"
	if status, _ := rawRequest(t, "GET", props+"/"+theirs, "", hdr(b)); status != 403 {
		t.Errorf("b reads a's proposal: %d", status)
	}
	if status, _ := rawRequest(t, "PATCH", props+"/"+theirs, `{"title":"Harmless"}`, hdr(b)); status != 403 {
		t.Errorf("b renames a's proposal: %d", status)
	}
}

// TestReviewPolicy: a store whose policy reviews /team/ takes a read_write key's write there
// as that key's proposal (named in a header), writes elsewhere directly, an exempt key's
// directly; a tool's write there is refused with what to do; only an exempt key approves it
// or changes the review; approval brings it in.
func TestReviewPolicy(t *testing.T) {
	ts := startServer(t, Options{})
	_, admin, _ := ts.keys.Create("admin", apikeys.ReadWrite, "")
	leadKey, lead, _ := ts.keys.Create("lead", apikeys.ReadWrite, "")
	_, agent, _ := ts.keys.Create("agent", apikeys.ReadWrite, "")
	h := func(key string) map[string]string {
		return map[string]string{"x-api-key": key, "content-type": "application/json"}
	}
	status, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"team","policy":{"review_paths":["team"]}}`, h(admin))
	if status != 400 || !strings.Contains(body, "must be a folder") {
		t.Errorf("a review path that is no folder: %d %s", status, body)
	}
	status, body = rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"team","policy":{"review_paths":["/team/"],"review_exempt":["`+leadKey.ID+`"]}}`, h(admin))
	var store struct{ ID string }
	if json.Unmarshal([]byte(body), &store); status != 200 || !strings.Contains(body, `"review_paths":["/team/"]`) {
		t.Fatalf("store: %d %s", status, body)
	}
	mems := ts.url + "/v1/memory_stores/" + store.ID + "/memories"
	status, _, header := rawExchange(t, "POST", mems, `{"path":"/team/x.md","content":"x"}`, h(agent))
	prop := header.Get(ProposalHeader)
	if status != 200 || !strings.HasPrefix(prop, "prop_") {
		t.Fatalf("the agent's write to /team/: %d, %s %q", status, ProposalHeader, prop)
	}
	// A refused write went nowhere: its answer names no proposal.
	status, _, header = rawExchange(t, "POST", mems, `{"path":"/team/x.md","content":"again","precondition":{"type":"not_exists"}}`, h(agent))
	if status < 400 || header.Get(ProposalHeader) != "" {
		t.Errorf("the agent's refused write: %d, %s %q", status, ProposalHeader, header.Get(ProposalHeader))
	}
	if status, _ := rawRequest(t, "POST", mems, `{"path":"/notes/y.md","content":"y"}`, h(agent)); status != 200 {
		t.Errorf("the agent's write elsewhere: %d", status)
	}
	if status, _ := rawRequest(t, "POST", mems, `{"path":"/team/z.md","content":"z"}`, h(lead)); status != 200 {
		t.Errorf("the exempt key's write: %d", status)
	}
	status, body = rawRequest(t, "POST", ts.url+"/v1/memory_stores/"+store.ID+"/tools/memory_write", `{"path":"/memories/team/t.md","content":"t"}`, h(agent))
	if status != 200 || !strings.Contains(body, `"is_error":true`) || !strings.Contains(body, "propose the change instead") {
		t.Errorf("a tool's write to /team/: %d %s", status, body)
	}
	st, err := ts.data.Store(context.Background(), store.ID)
	if err != nil {
		t.Fatal(err)
	}
	have := func(path string) bool {
		_, err := st.GetByPath(context.Background(), path, false)
		return err == nil
	}
	if have("/team/x.md") || !have("/notes/y.md") || !have("/team/z.md") || have("/team/t.md") {
		t.Errorf("main holds x %v y %v z %v t %v; want y and z", have("/team/x.md"), have("/notes/y.md"), have("/team/z.md"), have("/team/t.md"))
	}
	// Only a key that the review exempts approves a change there, or changes the review.
	for _, key := range []string{agent, admin} {
		if status, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores/"+store.ID+"/proposals/"+prop+"/approve", `{}`, h(key)); status != 400 || !strings.Contains(body, "only a key that this store's review policy exempts") {
			t.Errorf("approval by a key under review: %d %s", status, body)
		}
		if status, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores/"+store.ID, `{"policy":{"review_paths":[]}}`, h(key)); status != 400 || !strings.Contains(body, "only a key that this store's review policy exempts") {
			t.Errorf("a key under review lifts the review: %d %s", status, body)
		}
	}
	if have("/team/x.md") {
		t.Error("a refused approval brought the change in")
	}
	if status, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores/"+store.ID+"/proposals/"+prop+"/approve", `{}`, h(lead)); status != 200 {
		t.Fatalf("approve: %d %s", status, body)
	}
	if !have("/team/x.md") {
		t.Error("the approved change is not in main")
	}
}

// TestProposalRouteRefusals: each proposals route refuses what it must, and a refusal changes
// nothing: no key, a read_only key deciding, a key limited to another store, malformed or
// oversized input, an unknown proposal.
func TestProposalRouteRefusals(t *testing.T) {
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("person", apikeys.ReadWrite, "")
	_, ro, _ := ts.keys.Create("reader", apikeys.ReadOnly, "")
	_, pk, _ := ts.keys.Create("agent", apikeys.Propose, "")
	h := func(key string) map[string]string {
		return map[string]string{"x-api-key": key, "content-type": "application/json"}
	}
	var store, other struct{ ID string }
	_, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"team"}`, h(rw))
	json.Unmarshal([]byte(body), &store)
	_, body = rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"other"}`, h(rw))
	json.Unmarshal([]byte(body), &other)
	_, limited, _ := ts.keys.Create("other only", apikeys.ReadWrite, other.ID)
	base := ts.url + "/v1/memory_stores/" + store.ID
	propose(t, base, pk, "", "/a.md")
	props := base + "/proposals"
	one := props + "/" + onlyOpenProposal(t, base, rw).ID
	_, before := rawRequest(t, "GET", props, "", h(rw))
	for _, tc := range []struct {
		name, method, url, body string
		header                  map[string]string
		status                  int
		says                    string
	}{
		{"no key", "GET", props, "", map[string]string{}, 401, "API key"},
		{"no key, approve", "POST", one + "/approve", `{}`, map[string]string{"content-type": "application/json"}, 401, "API key"},
		{"read_only approves", "POST", one + "/approve", `{}`, h(ro), 403, "read_only"},
		{"read_only rejects", "POST", one + "/reject", `{}`, h(ro), 403, "read_only"},
		{"read_only comments", "POST", one + "/comments", `{"body":"x"}`, h(ro), 403, "read_only"},
		{"read_only renames", "PATCH", one, `{"title":"x"}`, h(ro), 403, "read_only"},
		{"another store's key lists", "GET", props, "", h(limited), 403, other.ID},
		{"another store's key approves", "POST", one + "/approve", `{}`, h(limited), 403, other.ID},
		{"unknown proposal", "GET", props + "/prop_01M8A5ACT2SXWCQWW7B6GG7XCD", "", h(rw), 404, "no proposal"},
		{"bad state filter", "GET", props + "?state=closed", "", h(rw), 400, "must be open"},
		{"unknown query parameter", "GET", props + "?sate=open", "", h(rw), 400, "unknown query parameter"},
		{"unknown body field", "POST", one + "/approve", `{"force":true}`, h(rw), 400, "force"},
		{"paths not an array", "POST", one + "/approve", `{"paths":"/a.md"}`, h(rw), 400, "paths"},
		{"empty paths", "POST", one + "/approve", `{"paths":[]}`, h(rw), 400, "at least one"},
		{"a path it does not change", "POST", one + "/approve", `{"paths":["/nope.md"]}`, h(rw), 400, "does not change"},
		{"empty comment", "POST", one + "/comments", `{"body":"  "}`, h(rw), 400, "must not be empty"},
		{"oversized comment", "POST", one + "/comments", `{"body":"` + strings.Repeat("x", 4001) + `"}`, h(rw), 400, "the limit is 4000"},
		{"oversized title", "PATCH", one, `{"title":"` + strings.Repeat("x", 201) + `"}`, h(rw), 400, "the limit is 200"},
		{"malformed JSON", "POST", one + "/comments", `{"body":`, h(rw), 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := rawRequest(t, tc.method, tc.url, tc.body, tc.header)
			if status != tc.status || !strings.Contains(body, tc.says) {
				t.Errorf("%d %s, want %d saying %q", status, body, tc.status, tc.says)
			}
		})
	}
	if _, after := rawRequest(t, "GET", props, "", h(rw)); after != before {
		t.Errorf("the refusals changed the proposals:\n%s\nwas\n%s", after, before)
	}
}

// TestApproveThousandOverHTTP: a propose key's 1,000 writes through the API are one proposal,
// approved with one request: main then holds the 1,000 memories, each version the agent's.
func TestApproveThousandOverHTTP(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("person", apikeys.ReadWrite, "")
	agentKey, pk, _ := ts.keys.Create("agent", apikeys.Propose, "")
	person := ts.client(option.WithAPIKey(rw))
	agent := ts.client(option.WithAPIKey(pk))
	store, err := person.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "team"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if _, err := agent.Beta.MemoryStores.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{
			Path: fmt.Sprintf("/m/%04d.md", i), Content: anthropic.String(fmt.Sprintf("memory %d\n", i))}); err != nil {
			t.Fatal(err)
		}
	}
	base := ts.url + "/v1/memory_stores/" + store.ID
	id := onlyOpenProposal(t, base, rw).ID
	if status, body := rawRequest(t, "POST", base+"/proposals/"+id+"/approve", `{}`, map[string]string{"x-api-key": rw, "content-type": "application/json"}); status != 200 {
		t.Fatalf("approve: %d %.500s", status, body)
	}
	st, err := ts.data.Store(ctx, store.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := st.Usage(ctx); err != nil || u.Memories != 1000 {
		t.Errorf("main holds %+v, %v; want 1,000 memories", u, err)
	}
	page, err := st.Versions(ctx, gitstore.VersionFilter{APIKeyID: agentKey.ID, Limit: 1000})
	if err != nil || len(page.Versions) != 1000 {
		t.Errorf("%d versions by the agent in main, %v", len(page.Versions), err)
	}
}

// proposerAndStore makes a read_write key, a propose key ("agent") and a store "team" that
// holds /main.md ("in main") on ts.
func proposerAndStore(t *testing.T, ts *testServer) (rw, agent string, store struct{ ID string }) {
	t.Helper()
	_, rw, _ = ts.keys.Create("person", apikeys.ReadWrite, "")
	_, agent, _ = ts.keys.Create("agent", apikeys.Propose, "")
	h := map[string]string{"x-api-key": rw, "content-type": "application/json"}
	_, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"team"}`, h)
	if json.Unmarshal([]byte(body), &store); store.ID == "" {
		t.Fatalf("store: %s", body)
	}
	if status, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores/"+store.ID+"/memories", `{"path":"/main.md","content":"in main"}`, h); status != 200 {
		t.Fatalf("a write to main: %d %s", status, body)
	}
	return rw, agent, store
}

// propose writes path with the propose key key, in session unless "", to the store at base
// (its URL): the write opens the session's proposal or adds to it. It returns the
// proposal's id, which the answer names.
func propose(t *testing.T, base, key, session, path string) string {
	t.Helper()
	h := map[string]string{"x-api-key": key, "content-type": "application/json"}
	if session != "" {
		h[SessionHeader] = session
	}
	status, body, header := rawExchange(t, "POST", base+"/memories", `{"path":"`+path+`","content":"x"}`, h)
	prop := header.Get(ProposalHeader)
	if status != 200 || prop == "" {
		t.Fatalf("the write of %s with a propose key: %d, %s %q\n%s", path, status, ProposalHeader, prop, body)
	}
	return prop
}

// openProposals lists the open proposals of the store at base as key reads them, newest
// first.
func openProposals(t *testing.T, base, key string) []proposalJSON {
	t.Helper()
	status, body := rawRequest(t, "GET", base+"/proposals?state=open", "", map[string]string{"x-api-key": key})
	var list struct{ Data []proposalJSON }
	if err := json.Unmarshal([]byte(body), &list); status != 200 || err != nil {
		t.Fatalf("the open proposals: %d %v %.500s", status, err, body)
	}
	return list.Data
}

// onlyOpenProposal is the one open proposal of the store at base that key reads.
func onlyOpenProposal(t *testing.T, base, key string) proposalJSON {
	t.Helper()
	open := openProposals(t, base, key)
	if len(open) != 1 {
		t.Fatalf("%d open proposals, want 1: %+v", len(open), open)
	}
	return open[0]
}

// TestReadingSessionOpensNoProposal: a propose key's session over MCP and the HTTP tool
// routes that only reads opens no proposal (nothing in main, nothing to review); its first
// change opens one, and the session then reads its own change, in later requests too.
func TestReadingSessionOpensNoProposal(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t, Options{})
	rw, agent, store := proposerAndStore(t, ts)
	h := map[string]string{"x-api-key": rw, "content-type": "application/json"}
	head := func() string {
		_, body := rawRequest(t, "GET", ts.url+"/v1/memory_stores/"+store.ID, "", h)
		return body
	}
	proposalsNow := func() int { return len(openProposals(t, ts.url+"/v1/memory_stores/"+store.ID, rw)) }
	before := head()
	ah := map[string]string{"x-api-key": agent, SessionHeader: "sesn_reader", "content-type": "application/json"}
	cs, err := mcpConnect(t, ctx, ts.url+MCPPath+"?store=team", ah)
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := mcpCall(t, ctx, cs, "memory", map[string]any{"command": "view", "path": "/memories"}); isErr || !strings.Contains(text, "main.md") {
		t.Errorf("view over MCP: %v %s", isErr, text)
	}
	tools := ts.url + "/v1/memory_stores/" + store.ID + "/tools/"
	if status, body := rawRequest(t, "POST", tools+"memory_read", `{"path":"/memories/main.md"}`, ah); status != 200 || !strings.Contains(body, "in main") {
		t.Errorf("memory_read: %d %s", status, body)
	}
	if n := proposalsNow(); n != 0 || head() != before {
		t.Fatalf("a session that only read: %d proposals; main before %s\nafter %s", n, before, head())
	}
	if text, isErr := mcpCall(t, ctx, cs, "memory", map[string]any{"command": "create", "path": "/memories/idea.md", "file_text": "an idea\n"}); isErr {
		t.Fatalf("create over MCP: %s", text)
	}
	if n := proposalsNow(); n != 1 {
		t.Errorf("after the session's first change: %d proposals, want 1", n)
	}
	if text, isErr := mcpCall(t, ctx, cs, "memory", map[string]any{"command": "view", "path": "/memories/idea.md"}); isErr || !strings.Contains(text, "an idea") {
		t.Errorf("the session reads its change over MCP: %v %s", isErr, text)
	}
	if status, body := rawRequest(t, "POST", tools+"memory_write", `{"path":"/memories/more.md","content":"more"}`, ah); status != 200 || strings.Contains(body, `"is_error":true`) {
		t.Errorf("a second change over the tool route: %d %s", status, body)
	}
	if status, body := rawRequest(t, "POST", tools+"memory_list", `{"path_prefix":"/memories"}`, ah); !strings.Contains(body, "idea.md") || !strings.Contains(body, "more.md") {
		t.Errorf("the session lists its changes: %d %s", status, body)
	}
	if n := proposalsNow(); n != 1 {
		t.Errorf("after the session's second change: %d proposals, want 1", n)
	}
	if _, body := rawRequest(t, "GET", ts.url+"/v1/memory_stores/"+store.ID+"/memories?path_prefix=/", "", h); strings.Contains(body, "idea.md") {
		t.Errorf("the proposal's change is in main: %s", body)
	}
}

// TestRefusedChangeOpensNoProposal: a propose key's session whose change is refused (an
// edit of text that is not there, a create of a memory that exists, a delete or rename of
// nothing) changed nothing, so it opens no proposal: nothing in main, nothing to review,
// nothing toward the key's bound. Nor does a change that succeeds as it would on any store
// but leaves the memory as it is (a write of the content it has, an edit of a text into
// itself). The session's first change that takes opens one.
func TestRefusedChangeOpensNoProposal(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t, Options{})
	rw, agent, store := proposerAndStore(t, ts)
	reviewed := func() string { return reviewerView(t, ts, rw, store.ID) }
	before := reviewed()
	ah := map[string]string{"x-api-key": agent, SessionHeader: "sesn_clumsy", "content-type": "application/json"}
	cs, err := mcpConnect(t, ctx, ts.url+MCPPath+"?store=team", ah)
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct {
		tool string
		args map[string]any
		want string
		done bool // succeeds, changing nothing
	}{
		{"memory", map[string]any{"command": "str_replace", "path": "/memories/main.md", "old_str": "absent", "new_str": "x"}, "did not appear verbatim", false},
		{"memory", map[string]any{"command": "insert", "path": "/memories/main.md", "insert_line": 9, "insert_text": "x"}, "Invalid `insert_line`", false},
		{"memory", map[string]any{"command": "str_replace", "path": "/memories/gone.md", "old_str": "a", "new_str": "b"}, "does not exist", false},
		{"memory", map[string]any{"command": "create", "path": "/memories/main.md", "file_text": "again"}, "already exists", false},
		{"memory", map[string]any{"command": "delete", "path": "/memories/gone.md"}, "does not exist", false},
		{"memory", map[string]any{"command": "rename", "old_path": "/memories/gone.md", "new_path": "/memories/here.md"}, "does not exist", false},
		{"memory", map[string]any{"command": "rename", "old_path": "/memories/main.md", "new_path": "/memories/main.md"}, "already exists", false},
		{"memory_delete", map[string]any{"path": "/memories/gone.md"}, "There is no memory or folder", false},
		{"memory", map[string]any{"command": "create", "path": "/memories/main.md/below.md", "file_text": "x"}, "is a file", false},
		{"memory_write", map[string]any{"path": "/memories/main.md/below.md", "content": "x"}, "is a file", false},
		{"memory_write", map[string]any{"path": "/memories/main.md", "content": "in main"}, "nothing changed", true},
		{"memory", map[string]any{"command": "str_replace", "path": "/memories/main.md", "old_str": "main", "new_str": "main"}, "has been edited", true},
		{"memory_edit", map[string]any{"path": "/memories/main.md", "old_string": "main", "new_string": "main"}, "replaced 1 occurrence", true},
	} {
		text, isErr := mcpCall(t, ctx, cs, call.tool, call.args)
		if isErr == call.done || !strings.Contains(text, call.want) {
			t.Errorf("%s %v: %v %s", call.tool, call.args, isErr, text)
		}
		if after := reviewed(); after != before {
			t.Fatalf("after the refused or unchanging %s %v:\n%s\nbefore:\n%s", call.tool, call.args, after, before)
		}
	}
	if text, isErr := mcpCall(t, ctx, cs, "memory", map[string]any{"command": "str_replace", "path": "/memories/main.md", "old_str": "in main", "new_str": "proposed"}); isErr {
		t.Fatalf("an edit that takes: %s", text)
	}
	if !strings.Contains(reviewed(), `"state":"open"`) {
		t.Errorf("the session's first change that takes opened no proposal")
	}
}

// reviewerView is what a reviewer with key rw reads of store id: main (its head) and the
// store's proposals.
func reviewerView(t *testing.T, ts *testServer, rw, id string) string {
	t.Helper()
	h := map[string]string{"x-api-key": rw}
	_, st := rawRequest(t, "GET", ts.url+"/v1/memory_stores/"+id, "", h)
	_, props := rawRequest(t, "GET", ts.url+"/v1/memory_stores/"+id+"/proposals", "", h)
	return st + "\n" + props
}

// TestRefusedRESTWriteOpensNoProposal: over the REST routes too, a write that goes to a
// proposal (a propose key's, or one to a folder that the store reviews) and is refused, or
// leaves the store as it is, opens no proposal; the first write that takes opens one and
// names it.
func TestRefusedRESTWriteOpensNoProposal(t *testing.T) {
	ts := startServer(t, Options{})
	rw, agent, store := proposerAndStore(t, ts)
	h := func(key string) map[string]string {
		return map[string]string{"x-api-key": key, "content-type": "application/json"}
	}
	mems := ts.url + "/v1/memory_stores/" + store.ID + "/memories"
	var list struct{ Data []struct{ ID string } }
	if _, body := rawRequest(t, "GET", mems+"?path_prefix=/", "", h(rw)); json.Unmarshal([]byte(body), &list) != nil || len(list.Data) != 1 {
		t.Fatalf("main.md: %s", body)
	}
	mainID := list.Data[0].ID
	if status, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores/"+store.ID, `{"policy":{"review_paths":["/team/"]}}`, h(rw)); status != 200 {
		t.Fatalf("review /team/: %d %s", status, body)
	}
	before := reviewerView(t, ts, rw, store.ID)
	sha := strings.Repeat("0", 64)
	for _, w := range []struct {
		key, method, url, body string
		status                 int
	}{
		{agent, "POST", mems, `{"path":"/new.md"}`, 400},
		{agent, "POST", mems, `{"path":"/main.md","content":"x","precondition":{"type":"not_exists"}}`, 409},
		{agent, "POST", mems, `{"path":"/main.md/below.md","content":"x"}`, 409},
		{agent, "POST", mems, `{"path":"/main.md","content":"x","precondition":{"type":"content_sha256","content_sha256":"` + sha + `"}}`, 409},
		{agent, "POST", mems, `{"path":"/main.md","content":"in main"}`, 200},
		{agent, "PATCH", mems + "/" + mainID, `{"content":"x","precondition":{"type":"content_sha256","content_sha256":"` + sha + `"}}`, 409},
		{agent, "PATCH", mems + "/mem_nothing", `{"content":"x"}`, 404},
		{agent, "PATCH", mems + "/" + mainID, `{"path":"/main.md"}`, 200},
		{agent, "DELETE", mems + "/mem_nothing", "", 404},
		{agent, "DELETE", mems + "/" + mainID + "?expected_content_sha256=" + sha, "", 409},
		{rw, "POST", mems, `{"path":"/team/x.md","content":"x","precondition":{"type":"content_sha256","content_sha256":"` + sha + `"}}`, 409},
		{rw, "PATCH", mems + "/" + mainID, `{"path":"/team/main.md","precondition":{"type":"content_sha256","content_sha256":"` + sha + `"}}`, 409},
	} {
		status, body, header := rawExchange(t, w.method, w.url, w.body, h(w.key))
		if status != w.status || header.Get(ProposalHeader) != "" {
			t.Errorf("%s %s %s: %d %s %q, want %d\n%s", w.method, w.url, w.body, status, ProposalHeader, header.Get(ProposalHeader), w.status, body)
		}
		if after := reviewerView(t, ts, rw, store.ID); after != before {
			t.Fatalf("after %s %s %s:\n%s\nbefore:\n%s", w.method, w.url, w.body, after, before)
		}
	}
	for key, reads := range map[string]string{agent: "true", rw: "false"} { // a proposer's reads see its proposal
		status, body, header := rawExchange(t, "POST", mems, `{"path":"/team/`+key[len(key)-4:]+`.md","content":"x"}`, h(key))
		if prop := header.Get(ProposalHeader); status != 200 || !strings.HasPrefix(prop, "prop_") || header.Get(ProposalReadsHeader) != reads {
			t.Errorf("a write that takes: %d %s %q %s %q, want %q\n%s", status, ProposalHeader, prop, ProposalReadsHeader, header.Get(ProposalReadsHeader), reads, body)
		}
	}
	if view := reviewerView(t, ts, rw, store.ID); strings.Count(view, `"state":"open"`) != 2 {
		t.Errorf("two writes that take, two callers: want two open proposals in\n%s", view)
	}
}

// TestProposalBoundsOverMCP: over /mcp, a new session of a propose key past a bound of open
// proposals (one key's or the store's, each at its lowest, 1) still connects and reads the
// store; its change is refused with the bound that stops it, and neither main nor the open
// proposal changes.
func TestProposalBoundsOverMCP(t *testing.T) {
	for _, tc := range []struct {
		name     string
		limits   Limits
		otherKey bool   // the new session is another key's, not the first key's
		why      string // in the refusal of its change, with the store's id
	}{
		{"one key's bound", Limits{MaxOpenProposalsPerKey: 1}, false,
			"has 1 open proposal in memory store %s; 1 is the most one key may have (the server's --max-open-proposals-per-key)"},
		{"the store's bound", Limits{MaxOpenProposals: 1}, true,
			"memory store %s has 1 open proposal; 1 is the most it may have (the server's --max-open-proposals)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ts := startServer(t, Options{Limits: tc.limits})
			rw, agent, store := proposerAndStore(t, ts)
			_, other, _ := ts.keys.Create("other agent", apikeys.Propose, "")
			h := map[string]string{"x-api-key": rw, "content-type": "application/json"}
			// The agent's first session takes the one open proposal that the bound allows.
			first, err := mcpConnect(t, ctx, ts.url+MCPPath+"?store=team", map[string]string{"x-api-key": agent, SessionHeader: "sesn_first"})
			if err != nil {
				t.Fatal(err)
			}
			if text, isErr := mcpCall(t, ctx, first, "memory", map[string]any{"command": "create", "path": "/memories/draft.md", "file_text": "a draft\n"}); isErr {
				t.Fatalf("the first session's create: %s", text)
			}
			// state is what a reviewer reads of main (its head) and of the proposals (each
			// with its changes).
			state := func() string {
				t.Helper()
				var b strings.Builder
				_, body := rawRequest(t, "GET", ts.url+"/v1/memory_stores/"+store.ID, "", h)
				b.WriteString(body)
				_, body = rawRequest(t, "GET", ts.url+"/v1/memory_stores/"+store.ID+"/proposals", "", h)
				b.WriteString(body)
				var list struct{ Data []struct{ ID string } }
				if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Data) != 1 {
					t.Fatalf("proposals: %v %s", err, body)
				}
				_, body = rawRequest(t, "GET", ts.url+"/v1/memory_stores/"+store.ID+"/proposals/"+list.Data[0].ID, "", h)
				b.WriteString(body)
				return b.String()
			}
			before := state()

			key := agent
			if tc.otherKey {
				key = other
			}
			cs, err := mcpConnect(t, ctx, ts.url+MCPPath+"?store=team", map[string]string{"x-api-key": key, SessionHeader: "sesn_new"})
			if err != nil {
				t.Fatalf("a new session past the bound connects: %v", err)
			}
			if got := cs.InitializeResult().Instructions; !strings.Contains(got, `holds the memory store "team" (read and write: your changes are proposed`) {
				t.Errorf("instructions: %s", got)
			}
			if text, isErr := mcpCall(t, ctx, cs, "memory", map[string]any{"command": "view", "path": "/memories/main.md"}); isErr || !strings.Contains(text, "in main") {
				t.Errorf("a new session past the bound views main.md: %v %s", isErr, text)
			}
			text, isErr := mcpCall(t, ctx, cs, "memory", map[string]any{"command": "create", "path": "/memories/new.md", "file_text": "new\n"})
			if why := fmt.Sprintf(tc.why, store.ID); !isErr || !strings.Contains(text, "a proposal for them cannot open") || !strings.Contains(text, why) {
				t.Errorf("a new session past the bound creates: %v %s; want refused with %q", isErr, text, why)
			}
			if after := state(); after != before {
				t.Errorf("main or the proposal changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// TestProposalsPerKey: each new session id of a propose key opens a proposal at its first
// write; past proposals.DefaultLimits.OpenPerKey of the key in the store, a new session's write is
// refused (409, saying what to do), and the key's open sessions and other keys still write.
func TestProposalsPerKey(t *testing.T) {
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("person", apikeys.ReadWrite, "")
	_, greedy, _ := ts.keys.Create("greedy agent", apikeys.Propose, "")
	_, other, _ := ts.keys.Create("other agent", apikeys.Propose, "")
	h := func(key, session string) map[string]string {
		m := map[string]string{"x-api-key": key, "content-type": "application/json"}
		if session != "" {
			m["x-gitmem-session-id"] = session
		}
		return m
	}
	var store struct{ ID string }
	_, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"team"}`, h(rw, ""))
	json.Unmarshal([]byte(body), &store)
	memories := ts.url + "/v1/memory_stores/" + store.ID + "/memories"
	for i := range proposals.DefaultLimits.OpenPerKey {
		if status, body := rawRequest(t, "POST", memories, fmt.Sprintf(`{"path":"/s%d.md","content":"x"}`, i), h(greedy, fmt.Sprintf("sesn_%d", i))); status != 200 {
			t.Fatalf("session %d's write: %d %s", i, status, body)
		}
	}
	status, body := rawRequest(t, "POST", memories, `{"path":"/more.md","content":"x"}`, h(greedy, "sesn_more"))
	if status != http.StatusConflict || !strings.Contains(body, "conflict_error") ||
		!strings.Contains(body, fmt.Sprintf("has %d open proposals", proposals.DefaultLimits.OpenPerKey)) || !strings.Contains(body, "approve or reject") {
		t.Errorf("a new session past the key's bound: %d %s", status, body)
	}
	// Over the tools, a new session of the key still reads; its change is refused with why.
	tools := ts.url + "/v1/memory_stores/" + store.ID + "/tools/"
	rawRequest(t, "POST", memories, `{"path":"/main.md","content":"in main"}`, h(rw, ""))
	if status, body := rawRequest(t, "POST", tools+"memory_read", `{"path":"/memories/main.md"}`, h(greedy, "sesn_more")); status != 200 ||
		strings.Contains(body, `"is_error":true`) || !strings.Contains(body, "in main") {
		t.Errorf("a new session's tool read past the key's bound: %d %s", status, body)
	}
	if status, body := rawRequest(t, "POST", tools+"memory_write", `{"path":"/memories/t.md","content":"t"}`, h(greedy, "sesn_more")); status != 200 ||
		!strings.Contains(body, `"is_error":true`) || !strings.Contains(body, "a proposal for them cannot open") || !strings.Contains(body, "open proposals") {
		t.Errorf("a new session's tool write past the key's bound: %d %s", status, body)
	}
	if status, body := rawRequest(t, "POST", memories, `{"path":"/s0.md","content":"again"}`, h(greedy, "sesn_0")); status != 200 {
		t.Errorf("an open session of the key: %d %s", status, body)
	}
	if status, body := rawRequest(t, "POST", memories, `{"path":"/o.md","content":"x"}`, h(other, "sesn_0")); status != 200 {
		t.Errorf("another key's proposal: %d %s", status, body)
	}
	// Proposals are the key's: it lists those of all its sessions, from any session or none;
	// the other key lists its own only, and is refused the greedy key's.
	list := ts.url + "/v1/memory_stores/" + store.ID + "/proposals?state=open"
	var got struct{ Data []struct{ ID string } }
	for _, session := range []string{"", "sesn_3", "sesn_new"} {
		_, body := rawRequest(t, "GET", list, "", h(greedy, session))
		if err := json.Unmarshal([]byte(body), &got); err != nil || len(got.Data) != proposals.DefaultLimits.OpenPerKey {
			t.Errorf("the greedy key lists, session %q: %d proposals, %v: %s", session, len(got.Data), err, body)
		}
	}
	greedyProp := got.Data[0].ID
	_, body = rawRequest(t, "GET", list, "", h(other, ""))
	if err := json.Unmarshal([]byte(body), &got); err != nil || len(got.Data) != 1 {
		t.Errorf("the other key lists %d proposals, %v: %s", len(got.Data), err, body)
	}
	if status, body := rawRequest(t, "GET", ts.url+"/v1/memory_stores/"+store.ID+"/proposals/"+greedyProp, "", h(other, "sesn_0")); status != http.StatusForbidden {
		t.Errorf("the other key reads the greedy key's proposal: %d %s", status, body)
	}
}

// TestBoundBeforeTrial: past a key's bound of open proposals, a new session's write is refused
// for the bound before it is tried on main (which takes the store's writer: a key at its
// bound may send new sessions' writes without end), over the REST routes and the tools: a
// write that main would refuse too gets the bound's 409, not its own refusal.
func TestBoundBeforeTrial(t *testing.T) {
	ts := startServer(t, Options{Limits: Limits{MaxOpenProposalsPerKey: 1}})
	_, rw, _ := ts.keys.Create("person", apikeys.ReadWrite, "")
	_, agent, _ := ts.keys.Create("agent", apikeys.Propose, "")
	h := func(key, session string) map[string]string {
		return map[string]string{"x-api-key": key, "content-type": "application/json", SessionHeader: session}
	}
	var store struct{ ID string }
	_, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"team"}`, h(rw, ""))
	json.Unmarshal([]byte(body), &store)
	memories := ts.url + "/v1/memory_stores/" + store.ID + "/memories"
	if status, body := rawRequest(t, "POST", memories, `{"path":"/first.md","content":"x"}`, h(agent, "sesn_first")); status != 200 {
		t.Fatalf("the first session's write: %d %s", status, body)
	}
	for _, w := range []struct{ method, url, body string }{
		{"POST", memories, `{"path":"/more.md","content":"x"}`},
		{"DELETE", memories + "/mem_nothing", ""},
		{"POST", memories, `{"path":"/new.md"}`}, // no content: checked before the bound, as ever
	} {
		status, body := rawRequest(t, w.method, w.url, w.body, h(agent, "sesn_more"))
		want := http.StatusConflict
		if w.body == `{"path":"/new.md"}` {
			want = http.StatusBadRequest
		}
		if status != want || want == http.StatusConflict && !strings.Contains(body, "has 1 open proposal") {
			t.Errorf("%s %s %s past the key's bound: %d %s, want %d", w.method, w.url, w.body, status, body, want)
		}
	}
	tools := ts.url + "/v1/memory_stores/" + store.ID + "/tools/"
	if status, body := rawRequest(t, "POST", tools+"memory_delete", `{"path":"/memories/gone.md"}`, h(agent, "sesn_more")); status != 200 ||
		!strings.Contains(body, `"is_error":true`) || !strings.Contains(body, "a proposal for them cannot open") {
		t.Errorf("a tool's delete of nothing past the key's bound: %d %s", status, body)
	}
}

// TestProposalClosedBeforeWrite: a propose key's write finds its proposal open, and a
// person approves it before the write reaches its fork (beforeProposalWrite). The write then
// goes as if no proposal were open: tried on main first, so that a refused one opens no new
// proposal of nothing, and one that passes opens a new proposal that holds it.
func TestProposalClosedBeforeWrite(t *testing.T) {
	ts := startServer(t, Options{})
	rw, agent, store := proposerAndStore(t, ts)
	mems := ts.url + "/v1/memory_stores/" + store.ID + "/memories"
	props := ts.url + "/v1/memory_stores/" + store.ID + "/proposals"
	ah := map[string]string{"x-api-key": agent, "content-type": "application/json"}
	rh := map[string]string{"x-api-key": rw, "content-type": "application/json"}
	status, body, header := rawExchange(t, "POST", mems, `{"path":"/first.md","content":"one"}`, ah)
	first := header.Get(ProposalHeader)
	if status != 200 || first == "" {
		t.Fatalf("the agent's first write: %d %q %s", status, first, body)
	}
	approveFirst := func() {
		beforeProposalWrite = nil
		if status, body := rawRequest(t, "POST", props+"/"+first+"/approve", `{}`, rh); status != 200 {
			t.Errorf("approve: %d %s", status, body)
		}
	}
	defer func() { beforeProposalWrite = nil }()
	openNow := func() (ids []string) {
		t.Helper()
		for _, p := range openProposals(t, ts.url+"/v1/memory_stores/"+store.ID, rw) {
			ids = append(ids, p.ID)
		}
		return ids
	}

	// Refused: an update of a memory that is nowhere.
	beforeProposalWrite = approveFirst
	status, body, header = rawExchange(t, "POST", mems+"/mem_00000000000000000000000000", `{"content":"two"}`, ah)
	if status != 404 || header.Get(ProposalHeader) != "" {
		t.Errorf("an update of no memory, its proposal approved meanwhile: %d %q %s", status, header.Get(ProposalHeader), body)
	}
	if open := openNow(); len(open) != 0 {
		t.Errorf("open proposals after a refused write: %v; want none", open)
	}

	// Passing: a new proposal opens and holds it.
	if status, body, header = rawExchange(t, "POST", mems, `{"path":"/second.md","content":"two"}`, ah); status != 200 || header.Get(ProposalHeader) == "" {
		t.Fatalf("the agent's write after the approval: %d %s", status, body)
	}
	second := header.Get(ProposalHeader)
	first = second
	beforeProposalWrite = approveFirst
	status, body, header = rawExchange(t, "POST", mems, `{"path":"/third.md","content":"three"}`, ah)
	third := header.Get(ProposalHeader)
	if status != 200 || third == "" || third == second {
		t.Fatalf("a write whose proposal was approved meanwhile: %d %q (the approved one %q) %s", status, third, second, body)
	}
	if open := openNow(); len(open) != 1 || open[0] != third {
		t.Errorf("open proposals: %v; want only %s", open, third)
	}
	_, body = rawRequest(t, "GET", props+"/"+third, "", rh)
	if !strings.Contains(body, "/third.md") {
		t.Errorf("the new proposal does not hold the write: %s", body)
	}
}

// TestProposalOpensWhereTheTrialRan: a propose key's first write, an update of a memory of
// main, passes its trial; before its proposal opens another writer deletes the memory from
// main (afterTrial). The proposal starts from the commit the trial ran on, so the update
// takes there, and the proposal holds it (before, the update met the delete: a 404, and an
// open proposal of nothing).
func TestProposalOpensWhereTheTrialRan(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t, Options{})
	rw, agent, store := proposerAndStore(t, ts)
	st, err := ts.data.Store(ctx, store.ID)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetByPath(ctx, "/main.md", false)
	if err != nil {
		t.Fatal(err)
	}
	afterTrial = func() {
		if _, err := st.Delete(ctx, gitstore.DeleteInput{ID: m.ID, Actor: LocalUser}); err != nil {
			t.Error(err)
		}
	}
	defer func() { afterTrial = nil }()
	mems := ts.url + "/v1/memory_stores/" + store.ID + "/memories/"
	status, body, header := rawExchange(t, "POST", mems+m.ID, `{"content":"changed"}`, map[string]string{"x-api-key": agent})
	prop := header.Get(ProposalHeader)
	if status != 200 || prop == "" {
		t.Fatalf("the agent's update: %d %s %q\n%s", status, ProposalHeader, prop, body)
	}
	var got struct {
		Changes []proposals.Change `json:"changes"`
	}
	status, body = rawRequest(t, "GET", ts.url+"/v1/memory_stores/"+store.ID+"/proposals/"+prop, "", map[string]string{"x-api-key": rw})
	if json.Unmarshal([]byte(body), &got); status != 200 || len(got.Changes) != 1 || got.Changes[0].Path != "/main.md" || got.Changes[0].After == nil || *got.Changes[0].After != "changed" {
		t.Errorf("the proposal: %d %s", status, body)
	}
}
