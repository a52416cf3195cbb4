package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/proposals"
	"github.com/gitmem/gitmem/proposals/proposalstest"
)

// listedProposal is a proposal of a list's page, as the tests read it.
type listedProposal struct {
	ID           string
	CommentCount int `json:"comment_count"`
	Comments     []struct{ Body string }
}

// proposalStore creates a store with key and writes the proposals that seed makes for the
// store's id as their records, before the server reads them; it returns the store's URL.
func proposalStore(t *testing.T, ts *testServer, key string, seed func(storeID string) []proposals.Proposal) string {
	t.Helper()
	status, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"queue"}`, map[string]string{"x-api-key": key, "content-type": "application/json"})
	if status != 200 {
		t.Fatalf("create the store: %d %s", status, body)
	}
	id := decodeJSON[struct{ ID string }](t, body).ID
	if err := proposalstest.Write(ts.data.Layout(), id, seed(id)); err != nil {
		t.Fatal(err)
	}
	return ts.url + "/v1/memory_stores/" + id
}

// listPages follows the pages of GET base/proposals?query with key from cursor ("" the
// first page) to the last, and returns their proposals in order. Every page but the last
// must hold limit proposals, and the last at least one (unless there are none).
func listPages(t *testing.T, base, query, cursor string, limit int, key string) []listedProposal {
	t.Helper()
	var all []listedProposal
	for pages := 1; ; pages++ {
		u := base + "/proposals?" + query
		if cursor != "" {
			u += "&page=" + url.QueryEscape(cursor)
		}
		status, body := rawRequest(t, "GET", u, "", map[string]string{"x-api-key": key})
		if status != 200 {
			t.Fatalf("GET ?%s, page %d: %d %.500s", query, pages, status, body)
		}
		pg := decodeJSON[proposalPage](t, body)
		all = append(all, pg.Data...)
		if pg.NextPage == nil {
			if len(pg.Data) == 0 && len(all) > 0 {
				t.Errorf("?%s: page %d is empty, after a page that said more followed", query, pages)
			}
			return all
		}
		if len(pg.Data) != limit {
			t.Errorf("?%s: page %d holds %d proposals and says more follow; want %d", query, pages, len(pg.Data), limit)
		}
		if cursor = *pg.NextPage; pages > 1000 {
			t.Fatalf("?%s: the pages do not end", query)
		}
	}
}

// proposalPage is a page of the list, as the tests read it.
type proposalPage struct {
	Data     []listedProposal
	NextPage *string `json:"next_page"`
}

func ids(l []listedProposal) []string {
	out := make([]string, len(l))
	for i, p := range l {
		out[i] = p.ID
	}
	return out
}

// TestProposalsListPages: the list of a store's proposals comes in pages chained by
// next_page, which together hold every proposal that the filters select exactly once,
// newest first, each page full but the last; a propose key's pages hold its own key's
// proposals only, and are full too. A proposal opened between two pages does not shift the
// next one. Each listed proposal holds its comment count and its last comment; the proposal
// itself its whole thread. A bad limit or page is a 400 that says what is wrong.
func TestProposalsListPages(t *testing.T) {
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("person", apikeys.ReadWrite, "")
	agentKey, pk, _ := ts.keys.Create("agent", apikeys.Propose, "")
	otherKey, _, _ := ts.keys.Create("other", apikeys.Propose, "")
	agent := gitstore.Actor{Type: gitstore.APIActor, ID: agentKey.ID, Name: "agent"}
	agentSession := gitstore.Actor{Type: gitstore.SessionActor, ID: "sesn_a", APIKeyID: agentKey.ID}
	other := gitstore.Actor{Type: gitstore.APIActor, ID: otherKey.ID, Name: "other"}
	var seeded []proposals.Proposal // oldest first
	base := proposalStore(t, ts, rw, func(storeID string) []proposals.Proposal {
		seeded = proposalstest.Decided(storeID, 250, other, func(i int, p *proposals.Proposal) {
			switch {
			case i%5 == 0:
				p.Author = proposals.ActorOf(agent)
			case i%11 == 0:
				p.Author = proposals.ActorOf(agentSession)
			}
			switch {
			case i%3 == 0:
				p.State, p.Merge, p.Dropped = proposals.Rejected, "", true
			case i%13 == 0:
				p.State, p.Merge, p.Dropped = proposals.Superseded, "", true
			}
			for j := range i % 4 {
				p.Comments = append(p.Comments, proposals.Comment{Author: p.Author, Body: fmt.Sprintf("comment %d on %d", j, i), CreatedAt: p.CreatedAt})
			}
		})
		return seeded
	})
	newest := slices.Clone(seeded)
	slices.Reverse(newest)
	want := func(keep func(p proposals.Proposal) bool) []string {
		var out []string
		for _, p := range newest {
			if keep(p) {
				out = append(out, p.ID)
			}
		}
		return out
	}
	all := func(proposals.Proposal) bool { return true }
	byAgentKey := func(p proposals.Proposal) bool { return p.ByKey(agentKey.ID) }
	for _, tc := range []struct {
		query string
		limit int
		key   string
		keep  func(p proposals.Proposal) bool
	}{
		{"", 20, rw, all},
		{"limit=7", 7, rw, all},
		{"limit=100", 100, rw, all},
		{"state=rejected&limit=9", 9, rw, func(p proposals.Proposal) bool { return p.State == proposals.Rejected }},
		{"state=superseded&limit=4", 4, rw, func(p proposals.Proposal) bool { return p.State == proposals.Superseded }},
		{"author_id=" + agentKey.ID + "&limit=6", 6, rw, func(p proposals.Proposal) bool { return p.Author.ID == agentKey.ID }},
		{"state=approved&author_id=" + otherKey.ID + "&limit=13", 13, rw, func(p proposals.Proposal) bool {
			return p.State == proposals.Approved && p.Author.ID == otherKey.ID
		}},
		// A propose key reads its own key's proposals only (its sessions' too), a fifth of
		// the store's and fewer: its pages are full all the same.
		{"limit=3", 3, pk, byAgentKey},
		{"limit=100", 100, pk, byAgentKey},
		{"state=rejected&limit=2", 2, pk, func(p proposals.Proposal) bool { return byAgentKey(p) && p.State == proposals.Rejected }},
		{"author_id=sesn_a&limit=2", 2, pk, func(p proposals.Proposal) bool { return byAgentKey(p) && p.Author.ID == "sesn_a" }},
	} {
		got := ids(listPages(t, base, tc.query, "", tc.limit, tc.key))
		if w := want(tc.keep); !slices.Equal(got, w) {
			t.Errorf("?%s (propose key: %v): %d proposals, want %d, newest first:\n%v\nwant\n%v", tc.query, tc.key == pk, len(got), len(w), got, w)
		}
	}

	// What a listed proposal holds of its thread; the proposal, all of it.
	byID := map[string]proposals.Proposal{}
	for _, p := range seeded {
		byID[p.ID] = p
	}
	for _, lp := range listPages(t, base, "limit=100", "", 100, rw) {
		p := byID[lp.ID]
		wantLast := []string{}
		if n := len(p.Comments); n > 0 {
			wantLast = append(wantLast, p.Comments[n-1].Body)
		}
		var last []string
		for _, c := range lp.Comments {
			last = append(last, c.Body)
		}
		if lp.CommentCount != len(p.Comments) || !slices.Equal(last, wantLast) {
			t.Errorf("%s listed with %d comments, %q; want %d, %q", lp.ID, lp.CommentCount, last, len(p.Comments), wantLast)
		}
	}
	full := seeded[len(seeded)-1-2] // 247: three comments
	status, body := rawRequest(t, "GET", base+"/proposals/"+full.ID, "", map[string]string{"x-api-key": rw})
	if got := decodeJSON[listedProposal](t, body); status != 200 || got.CommentCount != 3 || len(got.Comments) != 3 {
		t.Errorf("GET %s: %d, %d comments of %d: %s", full.ID, status, len(got.Comments), got.CommentCount, body)
	}

	// A proposal that opens between two pages is not on the next ones (they continue where
	// the first stopped); a new first page starts with it.
	status, body = rawRequest(t, "GET", base+"/proposals?limit=10", "", map[string]string{"x-api-key": rw})
	first := decodeJSON[struct {
		NextPage *string `json:"next_page"`
	}](t, body)
	if status != 200 || first.NextPage == nil {
		t.Fatalf("the first page: %d %.300s", status, body)
	}
	if status, body := rawRequest(t, "POST", base+"/memories", `{"path":"/new.md","content":"new"}`, map[string]string{"x-api-key": pk, "content-type": "application/json"}); status != 200 {
		t.Fatalf("the agent's write: %d %s", status, body)
	}
	if got, w := ids(listPages(t, base, "limit=10", *first.NextPage, 10, rw)), want(all)[10:]; !slices.Equal(got, w) {
		t.Errorf("the pages after the first, once a proposal opened: %d proposals, want %d", len(got), len(w))
	}
	if got := ids(listPages(t, base, "limit=10", "", 10, rw)); len(got) != len(seeded)+1 || slices.Contains(want(all), got[0]) || !slices.Equal(got[1:], want(all)) {
		t.Errorf("the pages from the first, once a proposal opened: %d proposals, the first %s", len(got), got[0])
	}

	// A bad limit or page says what is wrong.
	otherListing := "page_" + base64.RawURLEncoding.EncodeToString([]byte("p/new.md")) // a memories listing's
	for _, tc := range []struct{ query, want string }{
		{"limit=0", `query parameter limit must be a whole number from 1 to 100, got \"0\"`},
		{"limit=101", `query parameter limit must be a whole number from 1 to 100, got \"101\"`},
		{"limit=ten", `query parameter limit must be a whole number from 1 to 100, got \"ten\"`},
		{"page=nonsense", `page \"nonsense\" is not a cursor that this listing returned`},
		{"page=page_%21%21", `page \"page_!!\" is not a cursor that this listing returned`},
		{"page=" + otherListing, `page \"` + otherListing + `\" is not a cursor that this listing returned`},
		{"state=shut", `state \"shut\" must be open, approved, rejected or superseded`},
		{"pages=2", `unknown query parameter \"pages\"; this request takes these query parameters: author_id, limit, page, state, beta`},
	} {
		status, body := rawRequest(t, "GET", base+"/proposals?"+tc.query, "", map[string]string{"x-api-key": rw})
		if status != 400 || !strings.Contains(body, `"invalid_request_error"`) || !strings.Contains(body, tc.want) {
			t.Errorf("?%s: %d %s; want 400 saying %s", tc.query, status, body, tc.want)
		}
	}
}

// TestProposalsListPagesAcrossDrop: an approval that makes a store drop its oldest decided
// proposal (it keeps MaxDecided) between two pages does not break the listing: the next
// pages continue where the first stopped, without the proposal dropped.
func TestProposalsListPagesAcrossDrop(t *testing.T) {
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("person", apikeys.ReadWrite, "")
	agentKey, pk, _ := ts.keys.Create("agent", apikeys.Propose, "")
	agent := gitstore.Actor{Type: gitstore.APIActor, ID: agentKey.ID, Name: "agent"}
	var seeded []proposals.Proposal
	base := proposalStore(t, ts, rw, func(storeID string) []proposals.Proposal {
		seeded = proposalstest.Decided(storeID, proposals.MaxDecided, agent, nil)
		return seeded
	})
	if status, body := rawRequest(t, "POST", base+"/memories", `{"path":"/new.md","content":"new"}`, map[string]string{"x-api-key": pk, "content-type": "application/json"}); status != 200 {
		t.Fatalf("the agent's write: %d %s", status, body)
	}
	status, body := rawRequest(t, "GET", base+"/proposals?limit=100", "", map[string]string{"x-api-key": rw})
	first := decodeJSON[proposalPage](t, body)
	if status != 200 || len(first.Data) != 100 || first.NextPage == nil {
		t.Fatalf("the first page: %d %.300s", status, body)
	}
	if status, body := rawRequest(t, "POST", base+"/proposals/"+first.Data[0].ID+"/approve", `{}`, map[string]string{"x-api-key": rw, "content-type": "application/json"}); status != 200 {
		t.Fatalf("approve the open proposal: %d %s", status, body)
	}
	var want []string // the decided ones after the first page's 99, newest first, but the oldest
	for i := len(seeded) - 1 - 99; i >= 1; i-- {
		want = append(want, seeded[i].ID)
	}
	if got := ids(listPages(t, base, "limit=100", *first.NextPage, 100, rw)); !slices.Equal(got, want) {
		t.Errorf("the pages after the first: %d proposals, want %d", len(got), len(want))
	}
}

// maxListPage bounds the answer of GET .../proposals at any limit (docs/api.md says 3 MB).
const maxListPage = 3 << 20

// listed is how many comments a listed proposal holds: its last (docs/api.md).
const listed = 1

// TestProposalsListSize: a page of the list, by default and at the largest limit, of
// proposals at the bounds (threads of MaxComments comments of MaxComment bytes, titles of
// MaxTitle bytes, the listed parts all of a character that JSON writes as six bytes), stays
// under maxListPage. The list answered every proposal with its whole thread: at the bounds
// (MaxDecided proposals) about 420 MB in one answer.
func TestProposalsListSize(t *testing.T) {
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("person", apikeys.ReadWrite, "")
	keyName := strings.Repeat("<", 64)
	agentKey, _, _ := ts.keys.Create(keyName, apikeys.Propose, "")
	agent := gitstore.Actor{Type: gitstore.SessionActor, ID: "sesn_" + strings.Repeat("x", 128), APIKeyID: agentKey.ID, Name: keyName}
	escaped, plain := strings.Repeat("<", proposals.MaxComment), strings.Repeat("a", proposals.MaxComment)
	base := proposalStore(t, ts, rw, func(storeID string) []proposals.Proposal {
		return proposalstest.Decided(storeID, 101, agent, func(i int, p *proposals.Proposal) {
			p.Title = strings.Repeat("<", proposals.MaxTitle)
			for j := range proposals.MaxComments {
				body := plain // the thread, which the list leaves out
				if j >= proposals.MaxComments-listed {
					body = escaped
				}
				p.Comments = append(p.Comments, proposals.Comment{Author: p.Author, Body: body, CreatedAt: p.CreatedAt})
			}
		})
	})
	for _, tc := range []struct {
		query string
		n     int
	}{{"", 20}, {"limit=100", 100}} {
		status, body := rawRequest(t, "GET", base+"/proposals?"+tc.query, "", map[string]string{"x-api-key": rw})
		if status != 200 {
			t.Fatalf("?%s: %d %.300s", tc.query, status, body)
		}
		if len(body) > maxListPage {
			t.Fatalf("?%s: the answer is %d bytes; the bound is %d", tc.query, len(body), maxListPage)
		}
		pg := decodeJSON[proposalPage](t, body)
		if len(pg.Data) != tc.n || pg.NextPage == nil {
			t.Fatalf("?%s: %d proposals, next page %v; want %d and more", tc.query, len(pg.Data), pg.NextPage, tc.n)
		}
		if p := pg.Data[0]; p.CommentCount != proposals.MaxComments || len(p.Comments) != listed || p.Comments[0].Body != escaped {
			t.Fatalf("?%s: the first proposal is listed with %d comments of %d", tc.query, len(p.Comments), p.CommentCount)
		}
		t.Logf("?%s: a page of %d proposals at the bounds is %d bytes", tc.query, len(pg.Data), len(body))
	}
}

// TestProposalRecordsNamesRefused: a store's proposals file of before, or a record, whose
// proposal id is a path ("../../keys") or another record's, or whose store is another, is
// refused when the server first reads the store's proposals (a 500, said in the log): no
// file outside the store's proposals is written, as moving the file into records would
// have written DATA/keys.json.
func TestProposalRecordsNamesRefused(t *testing.T) {
	author := gitstore.Actor{Type: gitstore.UserActor, ID: "user_local"}
	for _, tc := range []struct {
		name  string
		write func(layout gitstore.Layout, storeID string) error
	}{
		{"an old file's id", func(layout gitstore.Layout, storeID string) error {
			l := proposalstest.Decided(storeID, 2, author, func(i int, p *proposals.Proposal) {
				if i == 1 {
					p.ID = "../../keys"
				}
			})
			b, _ := json.Marshal(l)
			return os.WriteFile(layout.ProposalsFile(storeID), b, 0o600)
		}},
		{"a record's id", func(layout gitstore.Layout, storeID string) error {
			l := proposalstest.Decided(storeID, 2, author, nil)
			if err := proposalstest.Write(layout, storeID, l); err != nil {
				return err
			}
			l[1].ID = "../../keys"
			b, _ := json.Marshal(l[1])
			return os.WriteFile(layout.ProposalRecord(storeID, l[0].ID), b, 0o600)
		}},
		{"a record's store", func(layout gitstore.Layout, storeID string) error {
			return proposalstest.Write(layout, storeID, proposalstest.Decided("../../x", 1, author, nil))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, Options{})
			_, rw, _ := ts.keys.Create("person", apikeys.ReadWrite, "")
			layout := ts.data.Layout()
			keysBefore, err := os.ReadFile(layout.KeysFile())
			if err != nil {
				t.Fatal(err)
			}
			status, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"queue"}`,
				map[string]string{"x-api-key": rw, "content-type": "application/json"})
			if status != 200 {
				t.Fatalf("create the store: %d %s", status, body)
			}
			id := decodeJSON[struct{ ID string }](t, body).ID
			if err := os.MkdirAll(layout.ProposalsDir(), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := tc.write(layout, id); err != nil {
				t.Fatal(err)
			}
			status, body = rawRequest(t, "GET", ts.url+"/v1/memory_stores/"+id+"/proposals", "", map[string]string{"x-api-key": rw})
			if status != 500 {
				t.Errorf("the list: %d %.300s; want 500", status, body)
			}
			if got, err := os.ReadFile(layout.KeysFile()); err != nil || !bytes.Equal(got, keysBefore) {
				t.Fatalf("keys.json after the list: %v\n%.300s", err, got)
			}
		})
	}
}

// TestProposalsCursorsRevealNothing: a propose key lists its own key's proposals only, so
// its cursors must tell it nothing of the others': two cursors taken with other keys'
// proposals opened between them have the same length and, without the ids of the pages'
// last proposals (which the key was shown), the same bytes. A cursor held the store-wide
// place of the page's last proposal, from which two cursors told how many proposals others
// opened in between. The pages still chain, and a cursor that is not one still gets a 400.
func TestProposalsCursorsRevealNothing(t *testing.T) {
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("person", apikeys.ReadWrite, "")
	agentKey, pk, _ := ts.keys.Create("agent", apikeys.Propose, "")
	_, otherPK, _ := ts.keys.Create("other", apikeys.Propose, "")
	agent := gitstore.Actor{Type: gitstore.APIActor, ID: agentKey.ID, Name: "agent"}
	var seeded []proposals.Proposal
	base := proposalStore(t, ts, rw, func(storeID string) []proposals.Proposal {
		seeded = proposalstest.Decided(storeID, 2, agent, nil)
		return seeded
	})
	open := func(key, session string) { propose(t, base, key, session, "/"+session+".md") }
	// firstPage is the agent's first page of one proposal: its id and cursor.
	firstPage := func() (string, string) {
		t.Helper()
		status, body := rawRequest(t, "GET", base+"/proposals?limit=1", "", map[string]string{"x-api-key": pk})
		pg := decodeJSON[proposalPage](t, body)
		if status != 200 || len(pg.Data) != 1 || pg.NextPage == nil {
			t.Fatalf("the agent's first page: %d %.300s", status, body)
		}
		return pg.Data[0].ID, *pg.NextPage
	}
	// rest is what cursor holds but the id of its page's last proposal, shown to the caller.
	rest := func(cursor, shown string) string {
		t.Helper()
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(cursor, "page_"))
		if err != nil {
			return cursor // not base64: all of it counts
		}
		return strings.Replace(string(raw), shown, "", 1)
	}

	open(pk, "sesn_x")
	x, first := firstPage()
	for i := range 5 {
		open(otherPK, fmt.Sprintf("sesn_other%d", i))
	}
	open(pk, "sesn_y")
	y, second := firstPage()
	if x == y {
		t.Fatalf("the agent's newest proposal is %s before and after it opened another", x)
	}
	if len(first) != len(second) || rest(first, x) != rest(second, y) {
		t.Errorf("two cursors of the agent's list, five proposals of others apart, differ beyond the ids it was shown:\n%s (%q)\n%s (%q)",
			first, rest(first, x), second, rest(second, y))
	}

	// The pages chain from either cursor, over the agent's proposals only.
	if got, want := ids(listPages(t, base, "limit=1", second, 1, pk)), []string{x, seeded[1].ID, seeded[0].ID}; !slices.Equal(got, want) {
		t.Errorf("the pages after the second cursor: %v, want %v", got, want)
	}
	if got, want := ids(listPages(t, base, "limit=1", first, 1, pk)), []string{seeded[1].ID, seeded[0].ID}; !slices.Equal(got, want) {
		t.Errorf("the pages after the first cursor: %v, want %v", got, want)
	}

	// Cursors that are none of this listing's are refused, an old one's saying so.
	cursor := func(payload string) string { return "page_" + base64.RawURLEncoding.EncodeToString([]byte(payload)) }
	for _, tc := range []struct{ page, want string }{
		{cursor("p/new.md"), `is not a cursor that this listing returned`}, // a memories listing's
		{cursor("iprop_nonsense"), `is not a cursor that this listing returned`},
		{cursor("i" + x + "!"), `is not a cursor that this listing returned`},
		{cursor("q3"), `is a cursor of an older form, which this listing no longer takes: list again from the first page`},
	} {
		status, body := rawRequest(t, "GET", base+"/proposals?limit=1&page="+url.QueryEscape(tc.page), "", map[string]string{"x-api-key": pk})
		if status != 400 || !strings.Contains(body, `"invalid_request_error"`) || !strings.Contains(body, tc.want) {
			t.Errorf("page %s: %d %s; want 400 saying %s", tc.page, status, body, tc.want)
		}
	}
}
